package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's container restart back-off (kubelet's crashLoopBackOff):
// 10 s, doubling per restart, at most 5 min, no jitter.
const (
	initialBackOff = 10 * time.Second
	maxBackOff     = 5 * time.Minute
)

// backOffEntry is one container's back-off, as in client-go's
// flowcontrol.Backoff: the current delay and when it was last raised
// (the container's last restart).
type backOffEntry struct {
	backoff    time.Duration
	lastUpdate time.Time
	// lastErr is, for an image pull, why the last one failed.
	lastErr string
	// reported is the exited container the BackOff event was given for:
	// one event per exit, not one per sync (the relist syncs every
	// second, and the event recorder's spam filter would then drop the
	// pod's other events).
	reported string
}

// expired is flowcontrol's hasExpired: a container that ran for twice the
// maximum back-off (10 min) since its last restart starts over at 10 s.
func expired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > 2*maxBackOff
}

// shouldRestart says whether c, exited with exitCode, is run again under
// the pod's restartPolicy. A completed (exit 0) init container never is; a
// sidecar (restartable init container) always is.
func shouldRestart(pod *corev1.Pod, c *corev1.Container, exitCode int32, init bool) bool {
	if init && isSidecar(c) {
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default: // Always (the default)
		return !init || exitCode != 0
	}
}

// doBackOff is upstream's kuberuntime doBackOff for c, whose newest
// container exited (rs): while the back-off since rs finished lasts, c
// waits in CrashLoopBackOff (with a BackOff event once, and the pod requeued
// for when it ends) and doBackOff returns true; otherwise the back-off is
// raised for the restart about to happen and it returns false.
func (w *Workers) doBackOff(pod *corev1.Pod, c *corev1.Container, rs *runtimeapi.ContainerStatus) bool {
	key := string(pod.UID) + "/" + c.Name
	finished := time.Unix(0, rs.FinishedAt)
	now := w.now()
	w.mu.Lock()
	e := w.backoffs[key]
	if e != nil && !expired(finished, e.lastUpdate) && now.Sub(finished) < e.backoff {
		delay, left := e.backoff, e.backoff-now.Sub(finished)
		report := e.reported != rs.Id
		e.reported = rs.Id
		w.mu.Unlock()
		w.setWaiting(pod, c.Name, "CrashLoopBackOff",
			fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, formatPod(pod)))
		if report {
			w.recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, formatPod(pod))
		}
		if w.queue != nil {
			w.queue.AddAfter(pod.Namespace+"/"+pod.Name, left)
		}
		return true
	}
	if e == nil || expired(finished, e.lastUpdate) {
		e = &backOffEntry{backoff: initialBackOff}
		w.backoffs[key] = e
	} else {
		e.backoff = min(2*e.backoff, maxBackOff)
	}
	e.lastUpdate = now
	w.mu.Unlock()
	return false
}

// pullKey is the back-off key of c's image pulls in pod.
func pullKey(pod *corev1.Pod, c *corev1.Container) string {
	return string(pod.UID) + "/pull/" + c.Image
}

// pullBackingOff is upstream's image pull back-off: after a failed pull of
// c's image, the next one waits 10 s, doubling to 5 min; meanwhile c waits
// in ImagePullBackOff (a BackOff event each time) and the pod is requeued
// for when the back-off ends.
func (w *Workers) pullBackingOff(pod *corev1.Pod, c *corev1.Container) bool {
	w.mu.Lock()
	e := w.backoffs[pullKey(pod, c)]
	var left time.Duration
	lastErr := ""
	if e != nil {
		left, lastErr = e.backoff-w.now().Sub(e.lastUpdate), e.lastErr
	}
	w.mu.Unlock()
	if left <= 0 {
		return false
	}
	msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
	// The status says why the last pull failed, as upstream's.
	w.setWaiting(pod, c.Name, "ImagePullBackOff", msg+": ErrImagePull: "+lastErr)
	w.recorder.Event(pod, corev1.EventTypeNormal, "BackOff", msg)
	if w.queue != nil {
		w.queue.AddAfter(pod.Namespace+"/"+pod.Name, left)
	}
	return true
}

// pullFailed raises the pull back-off of c's image after a pull failed
// with err.
func (w *Workers) pullFailed(pod *corev1.Pod, c *corev1.Container, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key, now := pullKey(pod, c), w.now()
	e := w.backoffs[key]
	if e == nil || expired(now, e.lastUpdate) {
		w.backoffs[key] = &backOffEntry{backoff: initialBackOff, lastUpdate: now, lastErr: err.Error()}
		return
	}
	e.backoff, e.lastUpdate, e.lastErr = min(2*e.backoff, maxBackOff), now, err.Error()
}

// forget drops the back-offs and waiting reasons of the pod with uid.
func (w *Workers) forget(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, uid)
	for k := range w.backoffs {
		if strings.HasPrefix(k, uid+"/") {
			delete(w.backoffs, k)
		}
	}
}

// formatPod is upstream's format.Pod: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
