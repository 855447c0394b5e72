package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/volumes"
)

// sandboxRuntime makes, stops and removes pod sandboxes.
type sandboxRuntime interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
}

// AddressPreference asks the pod network for addresses a pod had before
// its sandbox is made; done is called once the sandbox is made.
type AddressPreference interface {
	Prefer(ips []string) (done func())
}

// containerRuntime makes, starts, stops and removes containers.
type containerRuntime interface {
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout int64) error
	RemoveContainer(ctx context.Context, id string) error
	UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error
}

var (
	_ sandboxRuntime   = (*cri.Runtime)(nil)
	_ sandboxRuntime   = (*cri.Fake)(nil)
	_ containerRuntime = (*cri.Runtime)(nil)
	_ containerRuntime = (*cri.Fake)(nil)
)

// execution performs the actions of one sync of one pod.
type execution struct {
	w       *Workers
	pod     *corev1.Pod
	state   podState
	volumes map[string]podconfig.Volume
	// config is the sandbox's config, once made.
	config *runtimeapi.PodSandboxConfig
	// env is what the containers share, once the sandbox is ready.
	env *sandboxEnv
	// failed are the containers an action failed for: their later
	// actions in this sync are skipped.
	failed map[string]bool
	errs   []error
}

// run starts what is missing of pod: its volumes, its sandbox, then its
// containers, as plan says. A plan that makes a sandbox is followed by
// a plan for its containers once it is ready.
func (w *Workers) run(ctx context.Context, pod *corev1.Pod) error {
	vols, err := w.volumes.Setup(ctx, pod)
	if err != nil {
		for _, e := range volumes.MountErrors(err) {
			w.recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", e.Error())
		}
		return fmt.Errorf("volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	state, err := w.state(ctx, string(pod.UID))
	if err != nil {
		return err
	}
	x := &execution{w: w, pod: pod, state: state, volumes: vols, failed: map[string]bool{}}
	k := w.knowledge()
	k.updated, _, _ = w.resizeSnapshot(string(pod.UID))
	for round := 0; round < 2; round++ {
		again, err := x.do(ctx, plan(pod, x.state, k))
		if err != nil || !again {
			return err
		}
	}
	return fmt.Errorf("the sandbox of pod %s/%s is not ready after RunPodSandbox", pod.Namespace, pod.Name)
}

// knowledge is what the workers know now, for plan.
func (w *Workers) knowledge() knowledge {
	k := knowledge{now: w.now(), backOff: w.restarts}
	if w.probes != nil {
		k.probes = w.probes
	}
	return k
}

// do performs acts in order. It stops at the first error of a pod or
// sandbox action; a container's error skips that container's later
// actions only, and all are returned together. again says a sandbox was
// made: the containers are still to be planned.
func (x *execution) do(ctx context.Context, acts []action) (again bool, err error) {
	w, pod := x.w, x.pod
	for _, a := range acts {
		switch a.kind {
		case killPod:
			return false, w.terminate(ctx, pod, a.grace)
		case stopPod:
			return false, w.stopFinished(ctx, pod)
		case removeSandbox:
			if err := w.sandboxes.RemovePodSandbox(ctx, a.id); err != nil {
				w.log.Warn("remove an old sandbox", "pod", key(pod), "sandbox", a.id, "err", err)
			}
		case removeContainer:
			if err := w.containers.RemoveContainer(ctx, a.id); err != nil {
				w.log.Warn("remove an old container", "pod", key(pod), "container", a.reason, "id", a.id, "err", err)
			}
		case killSandbox:
			w.recorder.Event(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
			if err := w.stopSandbox(ctx, pod, a.id, gracePeriod(pod)); err != nil {
				return false, err
			}
		case createSandbox:
			return true, x.createSandbox(ctx, a.attempt)
		case prepareSandbox:
			if err := x.prepareSandbox(); err != nil {
				return false, err
			}
		case stopSidecar:
			if err := w.stopContainer(ctx, pod, a.container, a.id, x.env.podIP(), gracePeriod(pod), true); err != nil {
				return false, fmt.Errorf("stop sidecar %q of pod %s: %w", a.container.Name, key(pod), err)
			}
		default:
			x.container(ctx, a)
		}
	}
	return false, errors.Join(x.errs...)
}

// container performs container action a, unless an earlier action of the
// same container failed.
func (x *execution) container(ctx context.Context, a action) {
	w, pod, c := x.w, x.pod, a.container
	if x.failed[c.Name] {
		return
	}
	var err error
	switch a.kind {
	case createContainer:
		if a.restart {
			w.restarting(pod, c, a.finished)
		}
		err = w.createContainer(ctx, pod, c, *x.env, int(a.attempt), a.remove, a.target)
	case startContainer:
		err = w.startContainer(ctx, pod, c, a.id, x.env.podIPs)
	case waitBackOff:
		w.backingOff(pod, a)
	case killContainer:
		err = w.killContainer(ctx, pod, a)
	case resizeContainer:
		err = w.resizeContainer(ctx, pod, c, a.id)
	case rejectContainer:
		w.setWaiting(pod, c.Name, "CreateContainerConfigError", a.reason)
		err = errors.New(a.reason)
	}
	if err != nil {
		x.failed[c.Name] = true
		x.errs = append(x.errs, fmt.Errorf("%s %q of pod %s/%s: %w", a.role, c.Name, pod.Namespace, pod.Name, err))
	}
}

// createSandbox makes the pod's sandbox (attempt) and reads the
// runtime's state again.
func (x *execution) createSandbox(ctx context.Context, attempt uint32) error {
	w, pod := x.w, x.pod
	dnsWarnings, err := x.sandboxConfig(attempt)
	if err != nil {
		return err
	}
	for _, warning := range dnsWarnings {
		switch warning.Reason {
		case "":
			w.log.Info("pod DNS", "pod", key(pod), "warning", warning.Message)
		case podconfig.ReasonMissingClusterDNS:
			w.recorder.Eventf(pod, corev1.EventTypeWarning, warning.Reason, "pod: %q. %s", formatPod(pod), warning.Message)
		default:
			w.recorder.Event(pod, corev1.EventTypeWarning, warning.Reason, warning.Message)
		}
	}
	handler, err := w.runtimeHandler(ctx, pod)
	if err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return err
	}
	done := func() {}
	if w.Addresses != nil && !pod.Spec.HostNetwork {
		var ips []string
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		done = w.Addresses.Prefer(ips)
	}
	_, err = w.sandboxes.RunPodSandbox(ctx, x.config, handler)
	done()
	if err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("run the sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if x.state, err = w.state(ctx, string(pod.UID)); err != nil {
		return err
	}
	if x.state.sandbox == nil || x.state.sandbox.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return fmt.Errorf("the sandbox of pod %s/%s is not ready after RunPodSandbox", pod.Namespace, pod.Name)
	}
	return nil
}

// sandboxConfig makes the config of the pod's sandbox (attempt), and the
// directories the runtime writes container logs to, as upstream's kubelet
// prepares them: <root>/<ns>_<name>_<uid>/<container>/.
func (x *execution) sandboxConfig(attempt uint32) ([]podconfig.DNSWarning, error) {
	w, pod := x.w, x.pod
	dns, dnsWarnings, err := podconfig.DNSConfig(pod, w.DNS, w.host)
	if err == nil {
		x.config, err = podconfig.SandboxConfig(pod, w.node, podconfig.Sandbox{
			Attempt:      attempt,
			CgroupParent: podconfig.PodCgroupName(pod, podconfig.QOSClass(pod), w.SystemdCgroups),
			LogDirectory: podconfig.PodLogDirectory(w.LogRoot, pod),
			DNS:          dns,
		})
	}
	if err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return nil, err
	}
	var names []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		names = append(names, c.Name)
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		names = append(names, ec.Name)
	}
	for _, name := range names {
		if err := os.MkdirAll(filepath.Join(x.config.LogDirectory, name), 0o755); err != nil {
			return nil, fmt.Errorf("make the log directory of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return dnsWarnings, nil
}

// prepareSandbox sets up what the containers of the ready sandbox share:
// its config (made by createSandbox in this sync, if it ran), IPs and
// /etc/hosts.
func (x *execution) prepareSandbox() error {
	if x.config == nil {
		if _, err := x.sandboxConfig(0); err != nil {
			return err
		}
	}
	podIPs := sandboxIPs(x.state.sandbox)
	if x.pod.Spec.HostNetwork {
		podIPs = x.w.node.HostIPs
	}
	etcHosts, err := x.w.writeEtcHosts(x.pod, podIPs)
	if err != nil {
		return err
	}
	x.env = &sandboxEnv{state: x.state, config: x.config, podIPs: podIPs, volumes: x.volumes, etcHosts: etcHosts}
	return nil
}

// sandboxEnv is what the containers of a pod share in one sync: the
// runtime's state of the pod, and its sandbox's config, IPs, volumes and
// /etc/hosts.
type sandboxEnv struct {
	state    podState
	config   *runtimeapi.PodSandboxConfig
	podIPs   []string
	volumes  map[string]podconfig.Volume
	etcHosts string
}

// podIP is the pod's primary IP, or "".
func (e *sandboxEnv) podIP() string {
	if len(e.podIPs) == 0 {
		return ""
	}
	return e.podIPs[0]
}

// killContainer stops the running container of a (a killContainer),
// which then restarts, as upstream's: with its restart policy after a
// failed probe, at once (the next action) after its spec changed.
func (w *Workers) killContainer(ctx context.Context, pod *corev1.Pod, a action) error {
	c := a.container
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s %s, will be restarted", c.Name, a.reason)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if err := w.stopContainer(ctx, pod, c, a.id, podIP, a.grace, false); err != nil {
		return fmt.Errorf("stop container %q, which %s: %w", c.Name, a.reason, err)
	}
	return nil
}

// stopFinished stops the sandbox of pod, which finished (Succeeded or
// Failed): its containers have all exited, so the sandbox goes too (and
// its IP with it), and its volumes; the object stays with its final
// status.
func (w *Workers) stopFinished(ctx context.Context, pod *corev1.Pod) error {
	if err := w.stopSandboxes(ctx, string(pod.UID)); err != nil {
		return err
	}
	w.probes.Remove(pod.UID)
	return w.volumes.TearDown(pod.UID)
}
