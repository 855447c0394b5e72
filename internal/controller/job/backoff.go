package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod failure backoff, as upstream: a replacement for a failed pod is
// created 10s after the failure, then 20s, 40s, … up to maxPodBackoff, the
// count starting over after a success.
const (
	podBackoff    = 10 * time.Second
	maxPodBackoff = 10 * time.Minute
)

// backoffRecord is what a job's next pod creation waits on: how many pods
// failed since the last success, and when the last of them finished.
type backoffRecord struct {
	failures    int32
	lastFailure time.Time
}

// backoffDelay is how long after the n-th consecutive failure the next pod
// may be created.
func backoffDelay(n int32) time.Duration {
	if n <= 0 {
		return 0
	}
	d := podBackoff
	for i := int32(1); i < n && d < maxPodBackoff; i++ {
		d *= 2
	}
	return min(d, maxPodBackoff)
}

// remaining is how long from now the next creation must still wait.
func (r backoffRecord) remaining(now time.Time) time.Duration {
	if r.failures == 0 {
		return 0
	}
	return max(backoffDelay(r.failures)-now.Sub(r.lastFailure), 0)
}

// after returns the record once the newly finished pods (those the job's
// status has not counted yet) are taken into account: a success resets the
// count, failures after the last success add to it.
func (r backoffRecord) after(succeeded, failed []*corev1.Pod) backoffRecord {
	if len(failed) == 0 && len(succeeded) == 0 {
		return r
	}
	var lastSuccess time.Time
	if len(succeeded) > 0 {
		r = backoffRecord{}
		for _, p := range succeeded {
			if t := finishedAt(p); t.After(lastSuccess) {
				lastSuccess = t
			}
		}
	}
	times := make([]time.Time, 0, len(failed))
	for _, p := range failed {
		times = append(times, finishedAt(p))
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for _, t := range times {
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		r.failures++
		if t.After(r.lastFailure) {
			r.lastFailure = t
		}
	}
	return r
}

// finishedAt estimates when a pod finished: when its last container
// terminated, else when it stopped being ready, else when it was deleted
// (less its grace period), else when it was created.
func finishedAt(p *corev1.Pod) time.Time {
	if t, ok := containersFinishedAt(p); ok {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinishedAt is the latest finish time of the pod's containers,
// if all of them have terminated.
func containersFinishedAt(p *corev1.Pod) (time.Time, bool) {
	var last time.Time
	for _, s := range p.Status.ContainerStatuses {
		t := s.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			return time.Time{}, false
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	return last, !last.IsZero()
}

// backoffStore keeps each job's backoffRecord between syncs, as upstream
// does (in memory: a restart forgets it).
type backoffStore struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{m: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = r
}

func (s *backoffStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
