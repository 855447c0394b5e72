package pods

import (
	"context"
	"errors"
	"orch/internal/kubelet/podconfig"

	corev1 "k8s.io/api/core/v1"
)

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
	id, err := w.containers.CreateContainer(ctx, env.state.sandbox.Id, cfg, env.config)
	if err != nil {
		w.setWaiting(pod, c.Name, "CreateContainerError", err.Error())
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	w.setWaiting(pod, c.Name, "", "")
	for _, old := range remove {
		if err := w.containers.RemoveContainer(ctx, old); err != nil {
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
	if err := w.containers.StartContainer(ctx, id); err != nil {
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
