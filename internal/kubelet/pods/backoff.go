package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Upstream's container restart back-off (kubelet's crashLoopBackOff) and
// image pull back-off: 10 s, doubling per restart (pull), at most 5 min,
// no jitter; one that was not raised for twice the maximum (10 min)
// starts over (flowcontrol.Backoff's expiry).
const (
	initialBackOff = 10 * time.Second
	maxBackOff     = 5 * time.Minute
)

// backOffNote is what the workers keep of one back-off key besides
// flowcontrol's delay.
type backOffNote struct {
	// lastErr is, for an image pull, why the last one failed, and
	// failedAt when.
	lastErr  string
	failedAt time.Time
	// reported is the exited container the BackOff event was given for:
	// one event per exit, not one per sync (the relist syncs every
	// second, and the event recorder's spam filter would then drop the
	// pod's other events).
	reported string
}

// funcClock is the real clock with Now (and Since) from now: the
// back-offs follow Workers.Now.
type funcClock struct {
	clock.RealClock
	now func() time.Time
}

func (c funcClock) Now() time.Time                  { return c.now() }
func (c funcClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }

// newBackOff is upstream's back-off on the clock of now.
func newBackOff(now func() time.Time) *flowcontrol.Backoff {
	b := flowcontrol.NewBackOff(initialBackOff, maxBackOff)
	b.Clock = funcClock{now: now}
	return b
}

// restartKey is the back-off key of c's restarts in pod.
func restartKey(pod *corev1.Pod, c *corev1.Container) string {
	return string(pod.UID) + "/" + c.Name
}

// pullKey is the back-off key of c's image pulls in pod.
func pullKey(pod *corev1.Pod, c *corev1.Container) string {
	return string(pod.UID) + "/pull/" + c.Image
}

// note is the note of key, made when missing; w.mu must be held.
func (w *Workers) note(key string) *backOffNote {
	n := w.notes[key]
	if n == nil {
		n = &backOffNote{}
		w.notes[key] = n
	}
	return n
}

// restarting raises c's restart back-off for the restart about to
// happen of its container that exited at finished.
func (w *Workers) restarting(pod *corev1.Pod, c *corev1.Container, finished time.Time) {
	key := restartKey(pod, c)
	w.mu.Lock()
	w.note(key) // so that forget finds the key
	w.mu.Unlock()
	w.restarts.Next(key, finished)
}

// backingOff keeps the container of a (a waitBackOff) waiting in
// CrashLoopBackOff, with a BackOff event once per exit, and queues the pod
// again for when the back-off ends.
func (w *Workers) backingOff(pod *corev1.Pod, a action) {
	c := a.container
	w.mu.Lock()
	n := w.note(restartKey(pod, c))
	report := n.reported != a.id
	n.reported = a.id
	w.mu.Unlock()
	w.setWaiting(pod, c.Name, "CrashLoopBackOff",
		fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", a.delay, c.Name, formatPod(pod)))
	if report {
		w.recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, formatPod(pod))
	}
	w.requeueAfter(pod, a.until.Sub(w.now()))
}

// pullBackingOff is upstream's image pull back-off: after a failed pull of
// c's image, the next one waits 10 s, doubling to 5 min; meanwhile c waits
// in ImagePullBackOff (a BackOff event each time) and the pod is requeued
// for when the back-off ends.
func (w *Workers) pullBackingOff(pod *corev1.Pod, c *corev1.Container) bool {
	key, now := pullKey(pod, c), w.now()
	if !w.pulls.IsInBackOffSinceUpdate(key, now) {
		return false
	}
	w.mu.Lock()
	n := w.note(key)
	left, lastErr := w.pulls.Get(key)-now.Sub(n.failedAt), n.lastErr
	w.mu.Unlock()
	msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
	// The status says why the last pull failed, as upstream's.
	w.setWaiting(pod, c.Name, "ImagePullBackOff", msg+": ErrImagePull: "+lastErr)
	w.recorder.Event(pod, corev1.EventTypeNormal, "BackOff", msg)
	w.requeueAfter(pod, left)
	return true
}

// pullFailed raises the pull back-off of c's image after a pull failed
// with err.
func (w *Workers) pullFailed(pod *corev1.Pod, c *corev1.Container, err error) {
	key, now := pullKey(pod, c), w.now()
	w.mu.Lock()
	n := w.note(key)
	n.lastErr, n.failedAt = err.Error(), now
	w.mu.Unlock()
	w.pulls.Next(key, now)
}

// requeueAfter queues pod again after d (none without a queue: a test's).
func (w *Workers) requeueAfter(pod *corev1.Pod, d time.Duration) {
	if w.queue != nil {
		w.queue.AddAfter(key(pod), d)
	}
}

// forget drops the back-offs, waiting reasons and resize state of the
// pod with uid.
func (w *Workers) forget(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, uid)
	delete(w.resize, uid)
	delete(w.rejected, uid)
	for k := range w.notes {
		if strings.HasPrefix(k, uid+"/") {
			delete(w.notes, k)
			w.restarts.DeleteEntry(k)
			w.pulls.DeleteEntry(k)
		}
	}
}

// formatPod is upstream's format.Pod: name_namespace(uid).
func formatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
