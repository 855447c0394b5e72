package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/prober"
	"orch/internal/kubelet/staticpods"
	"orch/internal/kubelet/volumes"
)

var everything = labels.Everything()

// errPullBackOff says an image pull waits for its back-off.
var errPullBackOff = errors.New("back-off pulling the image")

// minGracePeriod is upstream's minimumGracePeriodInSeconds: a container
// always gets this long to stop.
const minGracePeriod = 2

// podState is what the runtime has of one pod.
type podState struct {
	sandbox    *runtimeapi.PodSandboxStatus           // the newest sandbox; nil when none
	containers map[string]*runtimeapi.ContainerStatus // by container name, newest
	// history holds every container of each name, newest first: the
	// one before the newest gives the lastState of a restarted one.
	history map[string][]*runtimeapi.ContainerStatus
	// active holds the newest container of each name in the newest
	// sandbox: what decides the pod's initialization (a new sandbox
	// runs its init containers again, as upstream's).
	active map[string]*runtimeapi.ContainerStatus
	// sandboxOf is the sandbox of each container, by container ID.
	sandboxOf map[string]string
	// emptyOld are the pod's sandboxes before the newest that hold no
	// container any more: they can go.
	emptyOld []string
}

// sync makes the runtime match the pod of key and writes the pod's status.
func (w *Workers) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := w.lister.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if static, ok := w.staticPod(ns, name); ok {
		return w.syncStatic(ctx, key, static, pod)
	}
	if pod == nil || staticpods.IsMirror(pod) {
		// Gone, or the mirror of a static pod whose file is gone (the
		// full resync deletes such mirrors): nothing of it may run.
		return w.killStale(ctx, ns, name, "")
	}
	return w.syncPod(ctx, key, pod, pod)
}

// staticPod is the static pod of namespace/name, if there is one.
func (w *Workers) staticPod(namespace, name string) (*corev1.Pod, bool) {
	if w.static == nil {
		return nil, false
	}
	return w.static.Get(namespace, name)
}

// syncStatic runs a static pod from its file and keeps its mirror pod in
// the API, which gets the status (apiPod is what the API has under the
// static pod's key, if anything).
func (w *Workers) syncStatic(ctx context.Context, key string, static, apiPod *corev1.Pod) error {
	var mirror *corev1.Pod
	if apiPod != nil && staticpods.IsMirror(apiPod) {
		mirror = apiPod
	}
	if err := w.mirrors.Sync(ctx, static, mirror); err != nil {
		w.log.Info("mirror pod", "pod", key, "err", err) // the static pod runs all the same
	}
	var target *corev1.Pod
	if mirror != nil && mirror.DeletionTimestamp == nil && mirror.Annotations[staticpods.AnnotationMirror] == string(static.UID) {
		target = mirror
		static.Status = *mirror.Status.DeepCopy()
	}
	return w.syncPod(ctx, key, static, target)
}

// syncPod makes the runtime match pod and writes its status to target
// (pod itself, or a static pod's mirror; nil: none yet).
func (w *Workers) syncPod(ctx context.Context, key string, pod, target *corev1.Pod) error {
	// Sandboxes of an earlier pod of the same name go first.
	if err := w.killStale(ctx, pod.Namespace, pod.Name, string(pod.UID)); err != nil {
		return err
	}
	w.keys.Store(string(pod.UID), key)
	if pod.DeletionTimestamp != nil {
		return w.terminate(ctx, pod)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// Its containers have all exited: the sandbox goes too (and its
		// IP with it), and its volumes; the object stays with its final
		// status.
		if err := w.stopSandboxes(ctx, string(pod.UID)); err != nil {
			return err
		}
		w.probes.Remove(pod.UID)
		return w.volumes.TearDown(pod.UID)
	}
	if target != nil {
		if evicted, err := w.evictOverSizeLimit(ctx, pod, target); evicted || err != nil {
			return err
		}
	}
	syncErr := w.run(ctx, pod)
	state, err := w.state(ctx, string(pod.UID))
	if err != nil {
		return errors.Join(syncErr, err)
	}
	w.probes.Sync(pod, w.probeIP(pod, state), runningContainers(state))
	if target == nil {
		return syncErr
	}
	return errors.Join(syncErr, w.writeStatus(ctx, pod, target, state))
}

// probeIP is the address probes of pod reach: its IP, or the node's for
// a pod on the host's network.
func (w *Workers) probeIP(pod *corev1.Pod, state podState) string {
	ips := sandboxIPs(state.sandbox)
	if pod.Spec.HostNetwork && len(w.node.HostIPs) > 0 {
		ips = w.node.HostIPs
	}
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// runningContainers are the running containers of state, by name.
func runningContainers(state podState) map[string]prober.Running {
	out := map[string]prober.Running{}
	for name, c := range state.containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out[name] = prober.Running{ID: c.Id, StartedAt: time.Unix(0, c.StartedAt)}
		}
	}
	return out
}

// run starts what is missing of pod: its volumes, its sandbox, then its
// containers.
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
	w.removeEmptySandboxes(ctx, pod, state)
	w.removeDeadContainers(ctx, pod, state)
	var attempt uint32
	if sb := state.sandbox; sb != nil && sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		// The sandbox died (its pause process, or a reboot): as upstream's
		// computePodActions, what is left of the pod is killed and a new
		// sandbox made, unless the pod's containers ran already and are
		// not to be restarted (restartPolicy Never).
		w.recorder.Event(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		if err := w.stopSandbox(ctx, pod, sb.Id, gracePeriod(pod)); err != nil {
			return err
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(state.containers) > 0 || regularContainersDone(pod, state) {
			return nil
		}
		attempt = sb.GetMetadata().GetAttempt() + 1
		state.sandbox = nil
	}
	qos := podconfig.QOSClass(pod)
	dns, dnsWarnings, err := podconfig.DNSConfig(pod, w.DNS, w.host)
	if err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return err
	}
	sbConfig, err := podconfig.SandboxConfig(pod, w.node, podconfig.Sandbox{
		Attempt:      attempt,
		CgroupParent: podconfig.PodCgroupName(pod, qos, w.SystemdCgroups),
		LogDirectory: podconfig.PodLogDirectory(w.LogRoot, pod),
		DNS:          dns,
	})
	if err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return err
	}
	// The runtime writes container logs there, as upstream's kubelet
	// prepares them: <root>/<ns>_<name>_<uid>/<container>/.
	var names []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		names = append(names, c.Name)
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		names = append(names, ec.Name)
	}
	for _, name := range names {
		if err := os.MkdirAll(filepath.Join(sbConfig.LogDirectory, name), 0o755); err != nil {
			return fmt.Errorf("make the log directory of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if state.sandbox == nil {
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
		if _, err := w.runtime.RunPodSandbox(ctx, sbConfig, ""); err != nil {
			w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return fmt.Errorf("run the sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if state, err = w.state(ctx, string(pod.UID)); err != nil {
			return err
		}
		if state.sandbox == nil || state.sandbox.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			return fmt.Errorf("the sandbox of pod %s/%s is not ready after RunPodSandbox", pod.Namespace, pod.Name)
		}
	}
	podIPs := sandboxIPs(state.sandbox)
	if pod.Spec.HostNetwork {
		podIPs = w.node.HostIPs
	}
	etcHosts, err := w.writeEtcHosts(pod, podIPs)
	if err != nil {
		return err
	}
	if regularContainersDone(pod, state) {
		// Every regular container exited for good (restartPolicy Never
		// or OnFailure): the sidecars stop too, and the pod completes
		// (upstream's KillPod when nothing is left to keep or start).
		return w.stopSidecars(ctx, pod, state, podIPs)
	}
	// Init containers first, in order, as upstream's
	// computeInitContainerActions: the regular ones start only after
	// every init container exited 0 and every sidecar started.
	env := sandboxEnv{state: state, config: sbConfig, podIPs: podIPs, volumes: vols, etcHosts: etcHosts}
	initToRun, initialized := initContainersToRun(pod, state, w.probes)
	var errs []error
	for _, c := range initToRun {
		if err := w.runContainer(ctx, pod, c, env, true); err != nil {
			errs = append(errs, fmt.Errorf("init container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
		}
	}
	if !initialized {
		return errors.Join(errs...)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if err := w.runContainer(ctx, pod, c, env, false); err != nil {
			errs = append(errs, fmt.Errorf("container %q of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if err := w.runEphemeral(ctx, pod, &pod.Spec.EphemeralContainers[i], env); err != nil {
			errs = append(errs, fmt.Errorf("ephemeral container %q of pod %s/%s: %w", pod.Spec.EphemeralContainers[i].Name, pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
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

// runEphemeral starts ephemeral container ec (kubectl debug) once, as
// upstream: it is never restarted, and it may share the process namespace
// of its target container.
func (w *Workers) runEphemeral(ctx context.Context, pod *corev1.Pod, ec *corev1.EphemeralContainer, env sandboxEnv) error {
	c := podconfig.AsContainer(ec)
	if cs := env.state.active[c.Name]; cs != nil {
		if cs.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			return w.startContainer(ctx, pod, c, cs.Id, env.podIPs) // created before, its start failed
		}
		return nil
	}
	target := ""
	if ec.TargetContainerName != "" {
		t := env.state.active[ec.TargetContainerName]
		if t == nil {
			err := fmt.Errorf("unable to find target container %s", ec.TargetContainerName)
			w.setWaiting(pod, c.Name, "CreateContainerConfigError", err.Error())
			return err
		}
		target = t.Id
	}
	return w.createContainer(ctx, pod, c, env, 0, nil, target)
}

// initContainersToRun are the init containers of pod that runContainer
// is to start, restart or check now, and whether pod is initialized (its
// regular containers may run), as upstream's computeInitContainerActions:
// init containers run one at a time, in order, each to completion (exit
// 0), except sidecars (restartPolicy Always), which keep running: the next
// one starts once a sidecar started (its startup probe passed). Once a
// regular container was created the pod stays initialized, and only its
// sidecars are kept running. A failed init container that is not to be
// restarted (restartPolicy Never) leaves the pod uninitialized for good.
func initContainersToRun(pod *corev1.Pod, state podState, probes probeResults) (run []*corev1.Container, initialized bool) {
	initialized = regularContainerCreated(pod, state)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		rs := state.active[c.Name]
		if isSidecar(c) {
			run = append(run, c)
			started := rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && (probes == nil || probes.Started(rs.Id))
			if !initialized && !started {
				return run, false
			}
			continue
		}
		if initialized {
			continue
		}
		exited := rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_EXITED
		switch {
		case exited && rs.ExitCode == 0:
			continue
		case exited && !shouldRestart(pod, c, rs.ExitCode, true):
			return run, false
		}
		return append(run, c), false
	}
	return run, true
}

// regularContainerCreated says whether any regular container of pod was
// created in its newest sandbox (upstream's
// HasAnyActiveRegularContainerStarted): the pod was then initialized.
func regularContainerCreated(pod *corev1.Pod, state podState) bool {
	for _, c := range pod.Spec.Containers {
		if state.active[c.Name] != nil {
			return true
		}
	}
	return false
}

// regularContainersDone says whether every regular container of pod
// exited and is not to run again.
func regularContainersDone(pod *corev1.Pod, state podState) bool {
	for i := range pod.Spec.Containers {
		rs := state.containers[pod.Spec.Containers[i].Name]
		if rs == nil || rs.State != runtimeapi.ContainerState_CONTAINER_EXITED || shouldRestart(pod, &pod.Spec.Containers[i], rs.ExitCode, false) {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

// isSidecar says whether c is a restartable init container (a sidecar).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// removeEmptySandboxes removes the pod's sandboxes before its newest that
// hold no container any more (their containers' last states were kept
// until newer attempts replaced them).
func (w *Workers) removeEmptySandboxes(ctx context.Context, pod *corev1.Pod, state podState) {
	for _, id := range state.emptyOld {
		if err := w.runtime.RemovePodSandbox(ctx, id); err != nil {
			w.log.Warn("remove an old sandbox", "pod", key(pod), "sandbox", id, "err", err)
		}
	}
}

// removeDeadContainers removes the exited containers of pod that no
// status needs, as upstream's container GC keeps one per container: of
// each name the newest stays, and the one before it for lastState and
// logs --previous while the newest runs, or when both ran in the same
// sandbox (a crash loop); an init container run again in a new sandbox
// lets go of its run in the old one.
func (w *Workers) removeDeadContainers(ctx context.Context, pod *corev1.Pod, state podState) {
	for name, hist := range state.history {
		for i, cs := range hist {
			if i == 0 || cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
				continue
			}
			newest := hist[0]
			if i == 1 && (newest.State != runtimeapi.ContainerState_CONTAINER_EXITED || state.sandboxOf[newest.Id] == state.sandboxOf[cs.Id]) {
				continue
			}
			if err := w.runtime.RemoveContainer(ctx, cs.Id); err != nil {
				w.log.Warn("remove an old container", "pod", key(pod), "container", name, "id", cs.Id, "err", err)
			}
		}
	}
}

// runContainer creates and starts c unless it exists. An exited container
// is created again, as the next attempt, when the pod's restartPolicy says
// so and its back-off has passed (upstream's computePodActions); the
// attempts before the exited one are then removed: it stays for lastState
// and logs --previous (see also removeDeadContainers).
func (w *Workers) runContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env sandboxEnv, init bool) error {
	attempt := 0
	var remove []string
	if hist := env.state.history[c.Name]; len(hist) > 0 {
		cs := hist[0]
		switch {
		case env.state.active[c.Name] == nil:
			// Its last attempt ran in an earlier sandbox: it runs again
			// in this one (an init container whatever its exit code).
			if !init && !shouldRestart(pod, c, cs.ExitCode, false) || w.doBackOff(pod, c, cs) {
				return nil
			}
			attempt = int(cs.GetMetadata().GetAttempt()) + 1
		case cs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
			return w.startContainer(ctx, pod, c, cs.Id, env.podIPs) // created before, its start failed
		case cs.State == runtimeapi.ContainerState_CONTAINER_EXITED:
			if !shouldRestart(pod, c, cs.ExitCode, init) || w.doBackOff(pod, c, cs) {
				return nil
			}
			attempt = int(cs.GetMetadata().GetAttempt()) + 1
			for _, old := range hist[1:] {
				remove = append(remove, old.Id)
			}
		case cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
			return w.killUnhealthy(ctx, pod, c, cs.Id)
		default:
			return nil
		}
	}
	return w.createContainer(ctx, pod, c, env, attempt, remove, "")
}

// createContainer creates attempt of c (pulling its image first when
// needed), removes the older attempts remove, and starts it. target, when
// set, is the container whose process namespace it joins (an ephemeral
// container's target).
func (w *Workers) createContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env sandboxEnv, attempt int, remove []string, target string) error {
	img, err := w.ensureImage(ctx, pod, c, env.config)
	if errors.Is(err, errPullBackOff) {
		return nil // requeued for when the back-off ends
	}
	if err != nil {
		return err
	}
	uid, username := img.GetUid(), img.GetUsername()
	var imageUID *int64
	if uid != nil {
		v := uid.Value
		imageUID = &v
	}
	termLog, err := w.terminationLogFile(pod, c)
	if err != nil {
		return err
	}
	cfg, err := podconfig.ContainerConfig(pod, c, w.node, podconfig.Container{
		RestartCount: attempt, ImageRef: img.Id, ImageUID: imageUID, ImageUsername: username, PodIPs: env.podIPs,
		Volumes: env.volumes, TerminationLogPath: termLog, EtcHostsPath: env.etcHosts, TargetContainerID: target,
	}, envSource{w.client, w.services})
	if err != nil {
		w.setWaiting(pod, c.Name, "CreateContainerConfigError", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	id, err := w.runtime.CreateContainer(ctx, env.state.sandbox.Id, cfg, env.config)
	if err != nil {
		w.setWaiting(pod, c.Name, "CreateContainerError", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	w.setWaiting(pod, c.Name, "", "")
	for _, old := range remove {
		if err := w.runtime.RemoveContainer(ctx, old); err != nil {
			w.log.Warn("remove an old container", "pod", key(pod), "container", c.Name, "id", old, "err", err)
		}
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Created", "Created container: %s", c.Name)
	return w.startContainer(ctx, pod, c, id, env.podIPs)
}

// startContainer starts container id of c and runs its postStart hook:
// when that fails, the container is killed (and restarts as the pod's
// restartPolicy says), as upstream's.
func (w *Workers) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, podIPs []string) error {
	if err := w.runtime.StartContainer(ctx, id); err != nil {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	hookErr := w.runHook(ctx, pod, c, id, podIP, c.Lifecycle.PostStart)
	if hookErr == nil {
		return nil
	}
	// The event does not carry the message, which may hold secrets.
	w.recorder.Event(pod, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	w.stopContainer(ctx, pod, c, id, podIP, gracePeriod(pod), false)
	return hookErr
}

// ensureImage returns c's image, pulling it when the runtime lacks it.
func (w *Workers) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sbConfig *runtimeapi.PodSandboxConfig) (*runtimeapi.Image, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	res, err := w.runtime.ImageStatus(ctx, spec, false)
	if err != nil {
		w.setWaiting(pod, c.Name, "ErrImagePull", err.Error())
		return nil, err
	}
	if res.GetImage() != nil && c.ImagePullPolicy != corev1.PullAlways {
		w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return res.Image, nil
	}
	if c.ImagePullPolicy == corev1.PullNever && res.GetImage() == nil {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		w.setWaiting(pod, c.Name, "ErrImageNeverPull", msg)
		w.recorder.Event(pod, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
		return nil, errors.New(msg)
	}
	if w.pullBackingOff(pod, c) {
		return nil, errPullBackOff
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	auths, missing, err := pullCredentials(ctx, w.client, pod, c.Image)
	if len(missing) > 0 {
		w.log.Info("unable to retrieve pull secrets, the image pull may not succeed", "pod", key(pod), "secrets", missing)
	}
	if err == nil {
		_, err = pullWithCredentials(auths, func(auth *runtimeapi.AuthConfig) (string, error) {
			return w.runtime.PullImage(ctx, spec, auth, sbConfig)
		})
	}
	if err != nil {
		if len(missing) > 0 {
			w.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
		}
		w.pullFailed(pod, c, err)
		w.setWaiting(pod, c.Name, "ErrImagePull", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		w.recorder.Event(pod, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		return nil, err
	}
	w.recorder.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
	if res, err = w.runtime.ImageStatus(ctx, spec, false); err != nil {
		return nil, err
	}
	if res.GetImage() == nil {
		return nil, fmt.Errorf("image %q is missing after it was pulled", c.Image)
	}
	return res.Image, nil
}

// state reads the runtime's sandboxes and containers of the pod with uid:
// the newest sandbox, and the containers of all its sandboxes, so that a
// pod whose sandbox was replaced keeps its containers' restart counts and
// last states, as upstream's.
func (w *Workers) state(ctx context.Context, uid string) (podState, error) {
	var st podState
	sandboxes, err := w.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podconfig.LabelPodUID: uid}})
	if err != nil {
		return st, err
	}
	if len(sandboxes) == 0 {
		return st, nil
	}
	newest := sandboxes[0]
	for _, sb := range sandboxes[1:] {
		a, b := sb.GetMetadata().GetAttempt(), newest.GetMetadata().GetAttempt()
		if a > b || a == b && sb.CreatedAt > newest.CreatedAt {
			newest = sb
		}
	}
	sbStatus, err := w.runtime.PodSandboxStatus(ctx, newest.Id, false)
	if err != nil {
		return st, err
	}
	st.sandbox = sbStatus.GetStatus()
	containers, err := w.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podconfig.LabelPodUID: uid}})
	if err != nil {
		return st, err
	}
	used := map[string]bool{}
	for _, c := range containers {
		used[c.PodSandboxId] = true
	}
	for _, sb := range sandboxes {
		if sb.Id != newest.Id && !used[sb.Id] {
			st.emptyOld = append(st.emptyOld, sb.Id)
		}
	}
	sort.SliceStable(containers, func(i, j int) bool {
		ai, aj := containers[i].GetMetadata().GetAttempt(), containers[j].GetMetadata().GetAttempt()
		if ai != aj {
			return ai < aj
		}
		return containers[i].CreatedAt < containers[j].CreatedAt
	})
	st.containers = map[string]*runtimeapi.ContainerStatus{}
	st.history = map[string][]*runtimeapi.ContainerStatus{}
	st.active = map[string]*runtimeapi.ContainerStatus{}
	st.sandboxOf = map[string]string{}
	for i := len(containers) - 1; i >= 0; i-- { // newest first
		c := containers[i]
		res, err := w.runtime.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			return st, err
		}
		cs := res.GetStatus()
		if cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if msg := terminationMessage(cs); msg != "" {
				cs.Message = strings.TrimPrefix(cs.Message+": "+msg, ": ")
			}
		}
		name := c.GetMetadata().GetName()
		if st.containers[name] == nil {
			st.containers[name] = cs
		}
		st.sandboxOf[c.Id] = c.PodSandboxId
		if st.active[name] == nil && c.PodSandboxId == newest.Id {
			st.active[name] = cs
		}
		st.history[name] = append(st.history[name], cs)
	}
	return st, nil
}

func (w *Workers) setWaiting(pod *corev1.Pod, container, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	uid := string(pod.UID)
	if reason == "" {
		delete(w.waiting[uid], container)
		return
	}
	if w.waiting[uid] == nil {
		w.waiting[uid] = map[string]*corev1.ContainerStateWaiting{}
	}
	w.waiting[uid][container] = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (w *Workers) waitingOf(pod *corev1.Pod) map[string]*corev1.ContainerStateWaiting {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*corev1.ContainerStateWaiting{}
	for k, v := range w.waiting[string(pod.UID)] {
		out[k] = v.DeepCopy()
	}
	return out
}

// sandboxIPs are the sandbox's IPs, the primary first.
func sandboxIPs(sb *runtimeapi.PodSandboxStatus) []string {
	n := sb.GetNetwork()
	if n.GetIp() == "" {
		return nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
