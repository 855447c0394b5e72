package job

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// trackStatus counts finished pods without ever counting one twice, as
// upstream does with finalizers:
//
//  1. the UIDs of newly finished pods are written to
//     status.uncountedTerminatedPods (and, for Indexed jobs, their indexes
//     to status.completedIndexes), together with an interim FailureTarget
//     or SuccessCriteriaMet condition;
//  2. their tracking finalizers are removed;
//  3. the UIDs whose finalizer is gone move into status.succeeded and
//     status.failed;
//  4. once nothing is uncounted and no pod is terminating, the final
//     Complete or Failed condition is written.
func (c *Controller) trackStatus(ctx context.Context, s *syncState, needsFlush bool) error {
	job := s.job
	if isIndexed(job) {
		sortByIndex(s.pods)
	}
	withFinalizer := sets.New[string]()
	for _, p := range s.pods {
		if hasFinalizer(p) && !s.finalizerPending.Has(string(p.UID)) {
			withFinalizer.Insert(string(p.UID))
		}
	}
	if moveCounted(&job.Status, withFinalizer) {
		needsFlush = true
	}
	toRelease, newIndexes, full, added := s.podsToCount()
	needsFlush = needsFlush || added
	if isIndexed(job) && s.updateIndexes(newIndexes) {
		needsFlush = true
	}
	if s.recordInterimCondition() {
		needsFlush = true
	}
	if needsFlush {
		if err := c.updateStatus(ctx, s); err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		c.backoff.set(s.key, s.backoff)
		needsFlush = false
	}
	released, releaseErr := c.releasePods(ctx, s.key, toRelease)
	withFinalizer.Delete(released...)
	if moveCounted(&s.job.Status, withFinalizer) {
		needsFlush = true
	}
	if releaseErr != nil {
		if needsFlush {
			if err := c.updateStatus(ctx, s); err != nil {
				return fmt.Errorf("removing uncounted pods from status: %w", err)
			}
		}
		return releaseErr
	}
	finished := !full && s.enactFinished(c.clock.Now())
	if !needsFlush && !finished {
		return nil
	}
	if err := c.updateStatus(ctx, s); err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if finished {
		c.recordFinished(s.job, s.finished)
	}
	return nil
}

// podsToCount picks the pods whose finalizer this sync removes and adds the
// finished ones to the uncounted UIDs (succeeded indexes are returned
// instead for Indexed jobs). full tells that it stopped at
// maxUncountedPods; added that the status changed.
func (s *syncState) podsToCount() (release []*corev1.Pod, newIndexes []int, full, added bool) {
	job := s.job
	uncounted := job.Status.UncountedTerminatedPods
	for _, p := range s.pods {
		uid := string(p.UID)
		if !hasFinalizer(p) || s.finalizerPending.Has(uid) {
			continue
		}
		failed := isPodFailed(p, job)
		if !s.canRelease(p, failed) {
			continue
		}
		release = append(release, p)
		ix, validIx := validIndex(job, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.uncountedFailed.Has(uid):
			if isIndexed(job) {
				if validIx && !s.prevSucceededIndexes.has(ix) {
					newIndexes = append(newIndexes, ix)
					added = true
				}
			} else if !s.uncountedSucceeded.Has(uid) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				added = true
			}
		case failed || (s.finished != nil && s.finished.Type != batchv1.JobSuccessCriteriaMet):
			// A job that is failing counts every pod it stops as failed.
			if !s.uncountedFailed.Has(uid) && (!isIndexed(job) || validIx) &&
				matchFailurePolicy(job.Spec.PodFailurePolicy, p).counts() {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				added = true
			}
		}
		if len(newIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxUncountedPods {
			return release, newIndexes, true, added
		}
	}
	return release, newIndexes, false, added
}

// canRelease reports whether pod's finalizer may go now: the job is being
// deleted or finishing, the pod succeeded, or it failed and is not the
// last failure of an index still waiting for its replacement.
func (s *syncState) canRelease(pod *corev1.Pod, failed bool) bool {
	if s.job.DeletionTimestamp != nil || s.finished != nil || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if ix := completionIndex(pod); ix != noIndex && hasBackoffLimitPerIndex(s.job) {
		if last, ok := s.lastFailedPerIndex[ix]; ok && last.UID == pod.UID {
			return false
		}
	}
	return true
}

// updateIndexes writes completedIndexes, succeeded and failedIndexes of an
// Indexed job and reports whether they changed.
func (s *syncState) updateIndexes(newIndexes []int) bool {
	st := &s.job.Status
	s.succeededIndexes = s.succeededIndexes.with(newIndexes...)
	completed := s.succeededIndexes.String()
	changed := completed != st.CompletedIndexes
	st.CompletedIndexes = completed
	st.Succeeded = int32(s.succeededIndexes.total())
	var failed *string
	if s.failedIndexes != nil {
		failed = ptr.To(s.failedIndexes.String())
	}
	if !ptr.Equal(failed, st.FailedIndexes) {
		st.FailedIndexes = failed
		changed = true
	}
	return changed
}

// recordInterimCondition adds a new FailureTarget or SuccessCriteriaMet
// condition to the status (the pods may go once it is written) and turns
// s.finished into the final condition. It reports whether the status
// changed.
func (s *syncState) recordInterimCondition() bool {
	f := s.finished
	if f == nil {
		return false
	}
	now := f.LastTransitionTime.Time
	switch f.Type {
	case batchv1.JobFailureTarget:
		s.job.Status.Conditions = append(s.job.Status.Conditions, *f)
		s.finished = newCondition(batchv1.JobFailed, f.Reason, f.Message, now)
		return true
	case batchv1.JobSuccessCriteriaMet:
		changed := false
		if cur := findCondition(s.job, batchv1.JobSuccessCriteriaMet); cur == nil || cur.Status != corev1.ConditionTrue {
			s.job.Status.Conditions = append(s.job.Status.Conditions, *f)
			changed = true
		}
		s.finished = newCondition(batchv1.JobComplete, f.Reason, f.Message, now)
		return changed
	}
	return false
}

// enactFinished writes the final condition (and completionTime) once every
// pod is counted and none is terminating.
func (s *syncState) enactFinished(now time.Time) bool {
	f := s.finished
	if f == nil {
		return false
	}
	st := &s.job.Status
	if u := st.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if s.terminating > 0 {
		return false
	}
	setCondition(s.job, f.Type, f.Status, f.Reason, f.Message, now)
	if f.Type == batchv1.JobComplete {
		st.CompletionTime = &findCondition(s.job, batchv1.JobComplete).LastTransitionTime
	}
	return true
}

// moveCounted moves the uncounted UIDs of pods whose finalizer is gone into
// the succeeded and failed counters, and reports whether it moved any.
func moveCounted(st *batchv1.JobStatus, withFinalizer sets.Set[string]) bool {
	u := st.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer.Has(string(uid)) {
				out = append(out, uid)
			}
		}
		return out
	}
	succeeded, failed := keep(u.Succeeded), keep(u.Failed)
	moved := len(succeeded) != len(u.Succeeded) || len(failed) != len(u.Failed)
	st.Succeeded += int32(len(u.Succeeded) - len(succeeded))
	st.Failed += int32(len(u.Failed) - len(failed))
	u.Succeeded, u.Failed = succeeded, failed
	return moved
}

// releasePods removes the tracking finalizer of pods and returns the UIDs
// whose finalizer is gone (a pod already deleted counts).
func (c *Controller) releasePods(ctx context.Context, key string, pods []*corev1.Pod) ([]string, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = string(p.UID)
	}
	c.exp.expectFinalizerRemovals(key, uids)
	done := make([]bool, len(pods))
	var firstErr atomic.Pointer[error]
	forEach(pods, func(i int, p *corev1.Pod) {
		err := c.removeFinalizer(ctx, p)
		if err != nil {
			c.exp.finalizerRemovalObserved(key, string(p.UID)) // never to be seen
			if !apierrors.IsNotFound(err) {
				firstErr.CompareAndSwap(nil, ptr.To(fmt.Errorf("removing tracking finalizer: %w", err)))
				return
			}
		}
		done[i] = true
	})
	var released []string
	for i, ok := range done {
		if ok {
			released = append(released, uids[i])
		}
	}
	return released, loadErr(&firstErr)
}

// updateStatus writes s.job's status and continues with what the server
// returned.
func (c *Controller) updateStatus(ctx context.Context, s *syncState) error {
	updated, err := c.client.BatchV1().Jobs(s.job.Namespace).UpdateStatus(ctx, s.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	s.job = updated
	if s.job.Status.UncountedTerminatedPods == nil {
		s.job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	return nil
}

// recordFinished records the event of a job that has just finished.
func (c *Controller) recordFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	if cond.Type != batchv1.JobComplete {
		c.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
		return
	}
	if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
		c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
}
