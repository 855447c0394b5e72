package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
)

// syncState is what one sync of a job knows and decides.
type syncState struct {
	key  string
	job  *batchv1.Job
	pods []*corev1.Pod
	// active are the pods neither finished nor being deleted.
	active []*corev1.Pod
	// succeeded and failed count the job's finished pods so far, counted
	// or not.
	succeeded, failed int32
	ready             int32
	terminating       int32
	// uncountedSucceeded and uncountedFailed are the UIDs in
	// status.uncountedTerminatedPods when the sync began.
	uncountedSucceeded, uncountedFailed sets.Set[string]
	// finalizerPending are pods whose finalizer removal is not yet seen.
	finalizerPending sets.Set[string]
	// finished is the condition the job is reaching, if any: an interim
	// FailureTarget or SuccessCriteriaMet, or the final Failed or Complete.
	finished *batchv1.JobCondition
	// For Indexed jobs: the succeeded indexes in the status and with the
	// newly succeeded pods, and the failed indexes (backoffLimitPerIndex).
	prevSucceededIndexes, succeededIndexes intervals
	failedIndexes                          *intervals
	// lastFailedPerIndex is, per index waiting for a replacement, its last
	// failed pod: its finalizer stays until the replacement carries its
	// failure count on.
	lastFailedPerIndex map[int]*corev1.Pod
	backoff            backoffRecord
}

// sync reconciles the job with key: claim its pods, decide whether it has
// failed or succeeded, create or delete pods, and count the finished ones
// into its status.
func (c *Controller) sync(ctx context.Context, key string) error {
	job, ok := c.jobToSync(key)
	if !ok {
		return nil
	}
	// Read the expectations before the pods, so a pod created after the
	// list cannot be missed by both.
	satisfied := c.exp.satisfied(key)
	pods, err := c.claimPods(ctx, job)
	if err != nil {
		return err
	}
	s := c.newSyncState(key, job, pods)
	now := c.clock.Now()
	if job.Status.StartTime == nil && !isSuspended(job) {
		job.Status.StartTime = timePtr(now)
	}
	c.checkFailure(s, now)
	if isIndexed(job) {
		c.checkIndexes(s, now)
	}
	active, suspendChanged, actErr := c.act(ctx, s, satisfied, now)
	needsUpdate := suspendChanged || active != job.Status.Active ||
		job.Status.Ready == nil || *job.Status.Ready != s.ready ||
		job.Status.Terminating == nil || *job.Status.Terminating != s.terminating
	job.Status.Active = active
	job.Status.Ready = int32Ptr(s.ready)
	job.Status.Terminating = int32Ptr(s.terminating)
	if err := c.trackStatus(ctx, s, needsUpdate); err != nil {
		return fmt.Errorf("tracking status: %w", err)
	}
	return actErr
}

// jobToSync returns a copy of the job with key if this controller is to
// sync it: it exists, is managed here, has not finished and has a known
// completion mode.
func (c *Controller) jobToSync(key string) (*batchv1.Job, bool) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false
	}
	shared, err := c.jobs.Jobs(ns).Get(name)
	if err != nil {
		c.exp.forget(key)
		c.backoff.remove(key)
		return nil, false
	}
	if !managedHere(shared) {
		return nil, false
	}
	if isFinished(shared) {
		c.backoff.remove(key)
		return nil, false
	}
	if m := shared.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		c.recorder.Event(shared, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil, false
	}
	job := withSpecDefaults(shared.DeepCopy())
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	return job, true
}

// act changes the pods: a finishing job loses its active pods (it only
// finishes once all deletions went through and earlier ones were seen);
// otherwise, once earlier creates and deletes were seen, the job is
// resized, and then either found complete or its Suspended condition
// updated. It returns how many pods are active afterwards and whether the
// Suspended condition changed.
func (c *Controller) act(ctx context.Context, s *syncState, satisfied bool, now time.Time) (int32, bool, error) {
	job := s.job
	active := int32(len(s.active))
	if s.finished != nil {
		deletedReady, deleted, err := c.deleteActive(ctx, job, s.active)
		if deleted != active || !satisfied {
			s.finished = nil
		}
		s.terminating += deleted
		s.ready -= deletedReady
		return active - deleted, false, err
	}
	managed := false
	var err error
	if satisfied && job.DeletionTimestamp == nil {
		active, err = c.manage(ctx, s)
		managed = true
	}
	switch {
	case completed(job, s.succeeded, active):
		s.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods", now)
	case managed:
		return active, c.updateSuspended(job, now), err
	}
	return active, false, err
}

func (c *Controller) newSyncState(key string, job *batchv1.Job, pods []*corev1.Pod) *syncState {
	s := &syncState{
		key: key, job: job, pods: pods,
		uncountedSucceeded: uidSet(job.Status.UncountedTerminatedPods.Succeeded),
		uncountedFailed:    uidSet(job.Status.UncountedTerminatedPods.Failed),
		finalizerPending:   c.exp.pendingFinalizerRemovals(key),
	}
	for _, p := range pods {
		switch {
		case isActive(p):
			s.active = append(s.active, p)
			if controller.PodReady(p) {
				s.ready++
			}
		case isTerminating(p):
			s.terminating++
		}
	}
	newSucceeded, newFailed := s.finishedWithFinalizer(false)
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)+s.uncountedSucceeded.Len())
	s.failed = job.Status.Failed + int32(s.uncountedFailed.Len())
	for _, p := range newFailed {
		if matchFailurePolicy(job.Spec.PodFailurePolicy, p).counts() {
			s.failed++
		}
	}
	s.backoff = c.backoff.get(key).after(newSucceeded, newFailed)
	return s
}

// finishedWithFinalizer returns the finished pods the status does not
// count yet: they still carry the finalizer (whose removal is not under
// way), have one of the job's indexes if it is Indexed, and, unless
// withUncounted, are not among the uncounted UIDs either.
func (s *syncState) finishedWithFinalizer(withUncounted bool) (succeeded, failed []*corev1.Pod) {
	for _, p := range s.pods {
		uid := string(p.UID)
		if !hasFinalizer(p) || s.finalizerPending.Has(uid) {
			continue
		}
		if _, ok := validIndex(s.job, p); !ok && isIndexed(s.job) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded && (withUncounted || !s.uncountedSucceeded.Has(uid)):
			succeeded = append(succeeded, p)
		case isPodFailed(p, s.job) && (withUncounted || !s.uncountedFailed.Has(uid)):
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// checkFailure decides whether the job has failed: an interim condition in
// the status, a FailJob rule, the backoff limit, or the deadline (and plans
// a sync for when the deadline comes).
func (c *Controller) checkFailure(s *syncState, now time.Time) {
	job := s.job
	if cond := findCondition(job, batchv1.JobSuccessCriteriaMet); cond != nil && cond.Status == corev1.ConditionTrue {
		s.finished = cond.DeepCopy()
		return
	}
	if cond := findCondition(job, batchv1.JobFailureTarget); cond != nil && cond.Status == corev1.ConditionTrue {
		s.finished = newCondition(batchv1.JobFailed, cond.Reason, cond.Message, now)
		return
	}
	if msg, ok := failJobMessage(job, s.pods); ok {
		s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, now)
		return
	}
	switch {
	case s.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, s.pods):
		s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now)
	case pastDeadline(job, now):
		s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", now)
	case job.Spec.ActiveDeadlineSeconds != nil && !isSuspended(job):
		c.delay.After(s.key, deadline(job).Sub(now))
	}
}

// checkIndexes computes an Indexed job's succeeded and failed indexes and
// whether they finish it: too many failed indexes, every index done with
// some failed, or the success policy met.
func (c *Controller) checkIndexes(s *syncState, now time.Time) {
	job := s.job
	completions := int(*job.Spec.Completions)
	s.prevSucceededIndexes = parseIntervals(job.Status.CompletedIndexes, completions)
	var newSucceeded []int
	for _, p := range s.pods {
		if ix, ok := validIndex(job, p); ok && p.Status.Phase == corev1.PodSucceeded && hasFinalizer(p) {
			newSucceeded = append(newSucceeded, ix)
		}
	}
	s.succeededIndexes = s.prevSucceededIndexes.with(newSucceeded...)
	s.succeeded = int32(s.succeededIndexes.total())
	if hasBackoffLimitPerIndex(job) {
		failed := s.failedIndexesNow()
		s.failedIndexes = &failed
		if s.finished == nil {
			switch {
			case job.Spec.MaxFailedIndexes != nil && failed.total() > int(*job.Spec.MaxFailedIndexes):
				s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes", now)
			case failed.total() > 0 && failed.total()+s.succeededIndexes.total() >= completions:
				s.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes", now)
			}
		}
		s.lastFailedPerIndex = s.lastFailedPods()
	}
	if s.finished == nil {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, *job.Spec.Completions, s.succeededIndexes); ok {
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, now)
		}
	}
}

// failedIndexesNow is status.failedIndexes plus the indexes whose new
// failure used up backoffLimitPerIndex or matched a FailIndex rule.
func (s *syncState) failedIndexesNow() intervals {
	job := s.job
	var prev intervals
	if job.Status.FailedIndexes != nil {
		prev = parseIntervals(*job.Status.FailedIndexes, int(*job.Spec.Completions))
	}
	var failed []int
	for _, p := range s.pods {
		if ix, ok := validIndex(job, p); ok && hasFinalizer(p) && indexFailed(job, p) {
			failed = append(failed, ix)
		}
	}
	return prev.with(failed...)
}

// indexFailed reports whether pod's failure fails its index.
func indexFailed(job *batchv1.Job, pod *corev1.Pod) bool {
	if !isPodFailed(pod, job) {
		return false
	}
	m := matchFailurePolicy(job.Spec.PodFailurePolicy, pod)
	if m.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	counted, _ := failureCounts(pod)
	return m.counts() && counted >= *job.Spec.BackoffLimitPerIndex
}

// lastFailedPods returns, for each index that is neither done nor running,
// its most recent failed pod not yet counted.
func (s *syncState) lastFailedPods() map[int]*corev1.Pod {
	running := sets.New(indexesOf(s.active)...)
	out := map[int]*corev1.Pod{}
	_, failed := s.finishedWithFinalizer(true)
	for _, p := range failed {
		ix, ok := validIndex(s.job, p)
		if !ok || s.succeededIndexes.has(ix) || s.failedIndexes.has(ix) || running.Has(ix) {
			continue
		}
		if last, ok := out[ix]; !ok || (absoluteFailures(last) <= absoluteFailures(p) && !finishedAt(p).Before(finishedAt(last))) {
			out[ix] = p
		}
	}
	return out
}

func absoluteFailures(pod *corev1.Pod) int32 {
	counted, ignored := failureCounts(pod)
	return counted + ignored
}

// updateSuspended sets the Suspended condition from spec.suspend, records
// the Suspended or Resumed event, and restarts the clock of
// activeDeadlineSeconds on resume. It reports whether anything changed.
func (c *Controller) updateSuspended(job *batchv1.Job, now time.Time) bool {
	if isSuspended(job) {
		if !setCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
			return false
		}
		c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
		return true
	}
	if !setCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now) {
		return false
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
	job.Status.StartTime = timePtr(now)
	return true
}

// completed reports whether enough pods succeeded and none still runs; a
// job without completions needs one success.
func completed(job *batchv1.Job, succeeded, active int32) bool {
	if active != 0 {
		return false
	}
	if job.Spec.Completions == nil {
		return succeeded > 0
	}
	return succeeded >= *job.Spec.Completions
}

// failJobMessage returns the message of the first failed pod a FailJob rule
// matches.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if m := matchFailurePolicy(job.Spec.PodFailurePolicy, p); m.action == batchv1.PodFailurePolicyActionFailJob {
			return m.message, true
		}
	}
	return "", false
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure a failing
// container restarts in place, so the restarts of running and pending pods
// count against backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, s := range list {
				restarts += s.RestartCount
			}
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

func deadline(job *batchv1.Job) time.Time {
	return job.Status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second)
}

// pastDeadline: the job has run (unsuspended) for activeDeadlineSeconds.
func pastDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return !now.Before(deadline(job))
}
