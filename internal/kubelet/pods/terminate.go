package pods

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
)

// terminate stops pod's containers and sandboxes within grace seconds
// and deletes the pod.
func (w *Workers) terminate(ctx context.Context, pod *corev1.Pod, grace int64) error {
	sandboxes, err := w.reader.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podconfig.LabelPodUID: string(pod.UID)}})
	if err != nil {
		return err
	}
	for _, sb := range sandboxes {
		if err := w.stopSandbox(ctx, pod, sb.Id, grace); err != nil {
			return err
		}
	}
	// How the containers ended, and the terminal phase, reach the API
	// before the pod goes, as upstream's kubelet writes them: controllers
	// read them (a Job's pod failure policy, its finalizer).
	state, err := w.state(ctx, string(pod.UID))
	if err != nil {
		return err
	}
	if err := w.writeStatus(ctx, pod, pod, state); err != nil {
		return err
	}
	for _, sb := range sandboxes {
		if err := w.sandboxes.RemovePodSandbox(ctx, sb.Id); err != nil {
			return err
		}
	}
	if err := w.release(pod.UID); err != nil {
		return err
	}
	uid := pod.UID
	err = w.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// killStale stops and removes the sandboxes of namespace/name whose pod
// UID is not keep (all of them when keep is empty): their pod is gone.
func (w *Workers) killStale(ctx context.Context, namespace, name, keep string) error {
	sandboxes, err := w.reader.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{
		podconfig.LabelPodNamespace: namespace, podconfig.LabelPodName: name}})
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range sandboxes {
		uid := sb.Labels[podconfig.LabelPodUID]
		if keep != "" && uid == keep {
			continue
		}
		if err := w.kill(ctx, nil, podconfig.LabelPodUID, uid, minGracePeriod); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, w.release(types.UID(uid)))
	}
	return errors.Join(errs...)
}

// kill stops the containers of the sandboxes labelled key=value within
// grace seconds, then stops and removes the sandboxes. pod, when not nil,
// gets the Killing events and its containers' preStop hooks run first.
func (w *Workers) kill(ctx context.Context, pod *corev1.Pod, key, value string, grace int64) error {
	sandboxes, err := w.reader.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{key: value}})
	if err != nil {
		return err
	}
	for _, sb := range sandboxes {
		if err := w.stopSandbox(ctx, pod, sb.Id, grace); err != nil {
			return err
		}
		if err := w.sandboxes.RemovePodSandbox(ctx, sb.Id); err != nil {
			return err
		}
	}
	return nil
}

// stopSandbox stops the containers of sandbox id within grace seconds,
// then the sandbox, as upstream's killPodWithSyncResult: the regular
// containers all at once, then the sidecars one by one in reverse order,
// each within what is left of the grace period.
func (w *Workers) stopSandbox(ctx context.Context, pod *corev1.Pod, id string, grace int64) error {
	start := time.Now()
	containers, err := w.reader.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: id})
	if err != nil {
		return err
	}
	podIP := ""
	if st, err := w.reader.PodSandboxStatus(ctx, id, false); err == nil {
		if ips := sandboxIPs(st.GetStatus()); len(ips) > 0 {
			podIP = ips[0]
		}
	}
	running := map[string]string{} // container name → ID
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING || c.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			running[c.GetMetadata().GetName()] = c.Id
		}
	}
	var sidecars []*corev1.Container
	if pod != nil {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			if c := &pod.Spec.InitContainers[i]; isSidecar(c) && running[c.Name] != "" {
				sidecars = append(sidecars, c)
			}
		}
	}
	errs := make(chan error, len(running))
	regular := 0
	for name, cid := range running {
		if slices.ContainsFunc(sidecars, func(c *corev1.Container) bool { return c.Name == name }) {
			continue
		}
		spec := &corev1.Container{Name: name}
		if pod != nil {
			if found := specOf(pod, name); found != nil {
				spec = found
			}
		}
		regular++
		go func() { errs <- w.stopContainer(ctx, pod, spec, cid, podIP, grace, true) }()
	}
	var stopErrs []error
	for range regular {
		stopErrs = append(stopErrs, <-errs)
	}
	for _, c := range sidecars {
		left := grace - int64(time.Since(start).Seconds())
		stopErrs = append(stopErrs, w.stopContainer(ctx, pod, c, running[c.Name], podIP, left, true))
	}
	if err := errors.Join(stopErrs...); err != nil {
		return err
	}
	return w.sandboxes.StopPodSandbox(ctx, id)
}

// stopSidecars stops pod's running sidecars, one by one in reverse order,
// once its regular containers are done.
func (w *Workers) stopSidecars(ctx context.Context, pod *corev1.Pod, state podState, podIPs []string) error {
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		rs := state.active[c.Name]
		if !isSidecar(c) || rs == nil || rs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := w.stopContainer(ctx, pod, c, rs.Id, podIP, gracePeriod(pod), true); err != nil {
			return fmt.Errorf("stop sidecar %q of pod %s: %w", c.Name, key(pod), err)
		}
	}
	return nil
}

// stopContainer stops container id of c within grace seconds, as
// upstream's killContainer: c's preStop hook first (pod not nil, when
// preStop is set), whose time counts against the grace period, then
// SIGTERM and, after what is left of it (at least 2 s), SIGKILL.
func (w *Workers) stopContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, grace int64, event bool) error {
	if pod != nil && event {
		w.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
	}
	if pod != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := time.Now()
		hookCtx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second)
		if err := w.runHook(hookCtx, pod, c, id, podIP, c.Lifecycle.PreStop); err != nil {
			w.log.Info("preStop hook failed", "pod", key(pod), "container", c.Name, "err", err)
			w.recorder.Event(pod, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
		}
		cancel()
		grace -= int64(time.Since(start).Seconds())
	}
	return w.containers.StopContainer(ctx, id, max(grace, minGracePeriod))
}

// specOf is pod's container, init container or ephemeral container
// called name, or nil.
func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return podconfig.AsContainer(ec)
		}
	}
	return nil
}

// gracePeriod is pod's terminationGracePeriodSeconds (30 s by default).
func gracePeriod(pod *corev1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// stopSandboxes stops the ready sandboxes of the pod with uid.
func (w *Workers) stopSandboxes(ctx context.Context, uid string) error {
	sandboxes, err := w.reader.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podconfig.LabelPodUID: uid},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return err
	}
	for _, sb := range sandboxes {
		if err := w.sandboxes.StopPodSandbox(ctx, sb.Id); err != nil {
			return err
		}
	}
	return nil
}
