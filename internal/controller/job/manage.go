package job

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
)

// manage creates or deletes pods so that the job runs as many as it should,
// and returns how many are active afterwards. A suspended job runs none;
// one without completions runs parallelism until a pod succeeds, then lets
// the running ones finish; otherwise it runs parallelism, at most the
// completions still missing. A replacement for a failed pod waits for the
// pod failure backoff.
func (c *Controller) manage(ctx context.Context, s *syncState) (int32, error) {
	job := s.job
	active := int32(len(s.active))
	if isSuspended(job) {
		removed, err := c.deleteJobPods(ctx, s, s.active)
		return active - removed, err
	}
	want := wantActive(job, s.succeeded, active)
	victims := podsToRemove(job, s.active, int(max(active-want, 0)))
	if len(victims) > maxPodChangesPerSync {
		victims = victims[:maxPodChangesPerSync]
	}
	if len(victims) > 0 {
		// Deletes and creates never happen in the same sync.
		removed, err := c.deleteJobPods(ctx, s, victims)
		return active - removed, err
	}
	var terminating int32
	if onlyReplaceFailed(job) {
		terminating = s.terminating
	}
	created, err := c.createMissing(ctx, s, want-terminating-active)
	return active + created, err
}

// createMissing creates up to n pods, as far as the failure backoff allows,
// and plans a sync for when it allows more. It returns how many it created.
func (c *Controller) createMissing(ctx context.Context, s *syncState, n int32) (int32, error) {
	n = min(n, maxPodChangesPerSync)
	if n <= 0 {
		return 0, nil
	}
	indexes, wait := s.indexesToCreate(int(n), c.clock.Now())
	if len(indexes) == 0 {
		if wait > 0 {
			c.delay.After(s.key, max(wait, time.Second))
		}
		return 0, nil
	}
	return c.createPods(ctx, s, indexes)
}

// indexesToCreate returns one entry per pod to create now: noIndex for a
// NonIndexed job, else the lowest pending indexes. When the backoff of a
// recent failure (of the job, or with backoffLimitPerIndex of every
// pending index) holds all of them back, it returns how long to wait.
func (s *syncState) indexesToCreate(n int, now time.Time) ([]int, time.Duration) {
	if !hasBackoffLimitPerIndex(s.job) {
		if wait := s.backoff.remaining(now); wait > 0 {
			return nil, wait
		}
	}
	if !isIndexed(s.job) {
		return slices.Repeat([]int{noIndex}, n), 0
	}
	indexes := s.pendingIndexes(n)
	if !hasBackoffLimitPerIndex(s.job) {
		return indexes, 0
	}
	return s.indexesPastBackoff(indexes, now)
}

// wantActive is how many pods the job should be running.
func wantActive(job *batchv1.Job, succeeded, active int32) int32 {
	parallelism := *job.Spec.Parallelism
	if job.Spec.Completions == nil {
		if succeeded > 0 {
			return active
		}
		return parallelism
	}
	return max(min(*job.Spec.Completions-succeeded, parallelism), 0)
}

// podsToRemove picks at least n of the active pods to delete: for an
// Indexed job first those without a valid index and the extra pods of a
// repeated index, then the pods least far along.
func podsToRemove(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var remove, keep []*corev1.Pod
	if isIndexed(job) {
		remove, keep = duplicateIndexPods(job, active)
	} else {
		keep = append(keep, active...)
	}
	if len(remove) < n {
		sort.SliceStable(keep, func(i, j int) bool { return lessFarAlong(keep[i], keep[j]) })
		remove = append(remove, keep[:n-len(remove)]...)
	}
	return remove
}

// duplicateIndexPods splits active pods into those to remove (no valid
// index, or not the most advanced pod of their index) and the rest.
func duplicateIndexPods(job *batchv1.Job, active []*corev1.Pod) (remove, keep []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range active {
		ix, ok := validIndex(job, p)
		if !ok {
			remove = append(remove, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	for _, pods := range byIndex {
		sort.SliceStable(pods, func(i, j int) bool { return lessFarAlong(pods[i], pods[j]) })
		remove = append(remove, pods[:len(pods)-1]...)
		keep = append(keep, pods[len(pods)-1])
	}
	return remove, keep
}

// lessFarAlong orders pods for deletion as upstream: unscheduled before
// scheduled, pending before unknown before running, not ready before
// ready, ready more recently, restarted more, created more recently.
func lessFarAlong(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	phaseRank := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if ra, rb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; ra != rb {
		return ra < rb
	}
	if ra, rb := controller.PodReady(a), controller.PodReady(b); ra != rb {
		return !ra
	}
	if ta, tb := readySince(a), readySince(b); controller.PodReady(a) && !ta.Equal(tb) {
		return ta.After(tb)
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	return a.CreationTimestamp.After(b.CreationTimestamp.Time)
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}

// pendingIndexes returns up to n indexes, lowest first, that no active pod
// holds and that have neither succeeded nor failed (nor, when only failed
// pods are replaced, have a pod still terminating).
func (s *syncState) pendingIndexes(n int) []int {
	taken := s.succeededIndexes.with(indexesOf(s.active)...)
	if onlyReplaceFailed(s.job) {
		var terminating []*corev1.Pod
		for _, p := range s.pods {
			if isTerminating(p) {
				terminating = append(terminating, p)
			}
		}
		taken = taken.with(indexesOf(terminating)...)
	}
	if s.failedIndexes != nil {
		taken = taken.merge(*s.failedIndexes)
	}
	var out []int
	for ix := 0; ix < int(*s.job.Spec.Completions) && len(out) < n; ix++ {
		if !taken.has(ix) {
			out = append(out, ix)
		}
	}
	return out
}

// indexesPastBackoff keeps the indexes whose own failure backoff is over;
// when none is, it returns the shortest wait.
func (s *syncState) indexesPastBackoff(indexes []int, now time.Time) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, ix := range indexes {
		last := s.lastFailedPerIndex[ix]
		if last == nil {
			ready = append(ready, ix)
			continue
		}
		r := backoffRecord{failures: absoluteFailures(last) + 1, lastFailure: finishedAt(last)}
		if w := r.remaining(now); w == 0 {
			ready = append(ready, ix)
		} else if wait == 0 || w < wait {
			wait = w
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// createPods creates one pod per entry of indexes (noIndex for NonIndexed
// jobs) in slow-start batches of 1, 2, 4, …, stopping after a batch with a
// failure. It returns how many were created.
func (c *Controller) createPods(ctx context.Context, s *syncState, indexes []int) (int32, error) {
	c.exp.expect(s.key, len(indexes), 0)
	var created int32
	var firstErr error
	next := 0
	for batch := 1; next < len(indexes); batch *= 2 {
		n := min(batch, len(indexes)-next)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for _, ix := range indexes[next : next+n] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.createPod(ctx, s.job, c.podFor(s, ix))
				if err == nil {
					atomic.AddInt32(&created, 1)
					return
				}
				c.exp.creationObserved(s.key) // never to be seen
				if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					errs <- err
				}
			}()
		}
		wg.Wait()
		next += n
		if len(errs) > 0 {
			firstErr = <-errs
			break
		}
	}
	for ; next < len(indexes); next++ {
		c.exp.creationObserved(s.key) // never attempted
	}
	return created, firstErr
}

// podFor builds the pod for index, with the failure counts of the pod it
// replaces when backoffLimitPerIndex is set.
func (c *Controller) podFor(s *syncState, index int) *corev1.Pod {
	var failures, ignored int32
	if last := s.lastFailedPerIndex[index]; last != nil && index != noIndex {
		failures, ignored = failureCounts(last)
		if matchFailurePolicy(s.job.Spec.PodFailurePolicy, last).counts() {
			failures++
		} else {
			ignored++
		}
	}
	return newPod(s.job, index, failures, ignored)
}

// deleteJobPods removes the tracking finalizer from pods (they are not to
// be counted as failed) and deletes them. It returns how many it deleted
// and the first error.
func (c *Controller) deleteJobPods(ctx context.Context, s *syncState, pods []*corev1.Pod) (int32, error) {
	if len(pods) == 0 {
		return 0, nil
	}
	c.exp.expect(s.key, 0, len(pods))
	var removed, removedReady int32
	var firstErr atomic.Pointer[error]
	forEach(pods, func(_ int, p *corev1.Pod) {
		err := c.removeFinalizer(ctx, p)
		if err == nil {
			err = c.deletePod(ctx, s.job, p)
		}
		if err != nil {
			c.exp.deletionObserved(s.key) // never to be seen
			if !apierrors.IsNotFound(err) {
				firstErr.CompareAndSwap(nil, ptr.To(err))
				return
			}
		}
		atomic.AddInt32(&removed, 1)
		if controller.PodReady(p) {
			atomic.AddInt32(&removedReady, 1)
		}
	})
	s.terminating += removed
	s.ready -= removedReady
	return removed, loadErr(&firstErr)
}

// deleteActive deletes the active pods of a job that is finishing, keeping
// their finalizers so that they are counted. It returns how many pods (and
// ready pods) it deleted.
func (c *Controller) deleteActive(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (ready, deleted int32, err error) {
	var firstErr atomic.Pointer[error]
	forEach(pods, func(_ int, p *corev1.Pod) {
		if err := c.deletePod(ctx, job, p); err != nil && !apierrors.IsNotFound(err) {
			firstErr.CompareAndSwap(nil, ptr.To(err))
			return
		}
		atomic.AddInt32(&deleted, 1)
		if controller.PodReady(p) {
			atomic.AddInt32(&ready, 1)
		}
	})
	return ready, deleted, loadErr(&firstErr)
}

func loadErr(p *atomic.Pointer[error]) error {
	if e := p.Load(); e != nil {
		return *e
	}
	return nil
}

// forEach runs fn on every pod at once and waits.
func forEach(pods []*corev1.Pod, fn func(int, *corev1.Pod)) {
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i, p)
		}()
	}
	wg.Wait()
}
