package cronjob

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"orch/internal/controller"
)

// sync reconciles the cron job with key: it drops finished and vanished
// jobs from status.active, deletes finished jobs beyond the history limits,
// starts the job that is due, writes status, and plans the next sync at the
// next start time.
func (c *Controller) sync(ctx context.Context, key string) error {
	cached, err := controller.Lookup(key, c.cronJobs.CronJobs)
	if cached == nil || err != nil {
		return err
	}
	jobs, err := c.jobsOf(cached)
	if err != nil {
		return err
	}
	p := &pass{Controller: c, cj: cached.DeepCopy(), now: c.clock.Now()}
	if stale, err := p.cacheIsStale(ctx, jobs); err != nil || stale {
		return err
	}
	p.deleteBeyondHistoryLimits(ctx, jobs)
	wake, planned, err := p.reconcile(ctx, jobs)
	if werr := p.writeStatus(ctx); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if planned {
		c.delay.After(key, wake.Sub(c.clock.Now()))
	}
	return nil
}

// jobsOf returns the jobs cj controls.
func (c *Controller) jobsOf(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := c.jobs.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, job := range all {
		if ref := metav1.GetControllerOfNoCopy(job); ref != nil && ref.Kind == cronJobKind.Kind && ref.UID == cj.UID {
			out = append(out, job)
		}
	}
	return out, nil
}

// pass is one sync of one cron job: a copy whose status it edits, and
// whether that status must be written.
type pass struct {
	*Controller
	cj      *batchv1.CronJob
	now     time.Time
	changed bool
	added   []corev1.ObjectReference // jobs this pass put into status.active
	removed []types.UID              // and took out of it
}

// addActive records a job this pass started in status.active.
func (p *pass) addActive(job *batchv1.Job) {
	ref := jobRef(job)
	p.cj.Status.Active = append(p.cj.Status.Active, ref)
	p.added = append(p.added, ref)
	p.changed = true
}

// dropActive takes a job out of status.active.
func (p *pass) dropActive(uid types.UID) {
	removeActive(p.cj, uid)
	p.removed = append(p.removed, uid)
	p.changed = true
}

// cacheIsStale reports whether a running job is missing from the cached
// status.active only because the cache lags behind the apiserver: the
// stored status lists it, or the job is already deleted. The informer then
// brings the news and the cron job is synced again. Running jobs missing
// from the stored status for no such reason are reported as UnexpectedJob.
func (p *pass) cacheIsStale(ctx context.Context, jobs []*batchv1.Job) (bool, error) {
	var stored *batchv1.CronJob
	for _, job := range jobs {
		if isFinished(job) || isActive(p.cj, job.UID) {
			continue
		}
		if stored == nil {
			var err error
			if stored, err = p.client.BatchV1().CronJobs(p.cj.Namespace).Get(ctx, p.cj.Name, metav1.GetOptions{}); err != nil {
				return false, err
			}
		}
		if isActive(stored, job.UID) {
			return true, nil
		}
		if gone, err := p.deletedMeanwhile(ctx, job); err != nil || gone {
			return gone, err
		}
		p.warn("UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", job.Name)
	}
	return false, nil
}

// deletedMeanwhile reports whether the job is gone from the apiserver while
// the cache still holds it (a job this controller replaced or cleaned up).
func (p *pass) deletedMeanwhile(ctx context.Context, job *batchv1.Job) (bool, error) {
	current, err := p.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return current.UID != job.UID || current.DeletionTimestamp != nil, nil
}

// deleteBeyondHistoryLimits deletes the oldest finished jobs beyond
// successfulJobsHistoryLimit and failedJobsHistoryLimit.
func (p *pass) deleteBeyondHistoryLimits(ctx context.Context, jobs []*batchv1.Job) {
	var succeeded, failed []*batchv1.Job
	for _, job := range jobs {
		switch finishedCondition(job) {
		case batchv1.JobComplete:
			succeeded = append(succeeded, job)
		case batchv1.JobFailed:
			failed = append(failed, job)
		}
	}
	var excess []*batchv1.Job
	if l := p.cj.Spec.SuccessfulJobsHistoryLimit; l != nil {
		excess = append(excess, beyondLimit(succeeded, *l)...)
	}
	if l := p.cj.Spec.FailedJobsHistoryLimit; l != nil {
		excess = append(excess, beyondLimit(failed, *l)...)
	}
	for _, job := range excess {
		_ = p.deleteJob(ctx, job.Name, job.UID) // reported; retried at the next sync
	}
}

// reconcile updates status.active and lastSuccessfulTime from the jobs,
// starts the job that is due, and returns when to sync again (planned is
// false when only a change can make a difference).
func (p *pass) reconcile(ctx context.Context, jobs []*batchv1.Job) (wake time.Time, planned bool, err error) {
	p.noteFinished(jobs)
	if err := p.dropVanished(ctx, jobs); err != nil {
		return time.Time{}, false, err
	}
	if p.cj.DeletionTimestamp != nil {
		return time.Time{}, false, nil
	}
	return p.startDue(ctx)
}

// noteFinished removes finished jobs from status.active and records the
// latest completion of a successful one.
func (p *pass) noteFinished(jobs []*batchv1.Job) {
	for _, job := range jobs {
		cond := finishedCondition(job)
		if cond == "" {
			continue
		}
		if isActive(p.cj, job.UID) {
			p.dropActive(job.UID)
			p.normal("SawCompletedJob", "Saw completed job: %s, condition: %v", job.Name, cond)
		}
		done := job.Status.CompletionTime
		if last := p.cj.Status.LastSuccessfulTime; cond == batchv1.JobComplete && done != nil && (last == nil || done.After(last.Time)) {
			p.cj.Status.LastSuccessfulTime = done.DeepCopy()
			p.changed = true
		}
	}
}

// dropVanished removes from status.active the jobs that no longer exist.
// The apiserver is asked, so that a lagging cache is not taken for a
// deletion.
func (p *pass) dropVanished(ctx context.Context, jobs []*batchv1.Job) error {
	known := map[types.UID]bool{}
	for _, job := range jobs {
		known[job.UID] = true
	}
	for _, ref := range slices.Clone(p.cj.Status.Active) {
		if known[ref.UID] {
			continue
		}
		_, err := p.client.BatchV1().Jobs(p.cj.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			p.dropActive(ref.UID)
			p.normal("MissingJob", "Active job went missing: %v", ref.Name)
		case err != nil:
			return err
		}
	}
	return nil
}

// startDue starts the job of the latest start time that is due, as
// spec.concurrencyPolicy allows, and returns when the next one is.
func (p *pass) startDue(ctx context.Context) (time.Time, bool, error) {
	cj := p.cj
	if z := cj.Spec.TimeZone; z != nil {
		if _, err := time.LoadLocation(*z); err != nil {
			p.warn("UnknownTimeZone", "invalid timeZone: %q: %s", *z, err)
			return time.Time{}, false, nil
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return time.Time{}, false, nil
	}
	if hasZonePrefix(cj.Spec.Schedule) {
		p.warn("UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := parseSchedule(cj)
	if err != nil {
		p.warn("UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return time.Time{}, false, nil
	}
	scheduled, howMany, err := timeToRun(cj, p.now, sched)
	if err != nil {
		p.warn("InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return time.Time{}, false, nil
	}
	if scheduled != nil {
		if howMany == manyMissed {
			p.warn("TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		}
		if err := p.startAt(ctx, *scheduled); err != nil {
			return time.Time{}, false, err
		}
	}
	wake, ok := nextWakeUp(cj, p.now, sched)
	return wake, ok, nil
}

// startAt creates the job for the start time scheduled unless it is too
// late, already done, or forbidden by a running job; with the Replace policy
// the running jobs are deleted first.
func (p *pass) startAt(ctx context.Context, scheduled time.Time) error {
	cj := p.cj
	if tooLate(cj, scheduled, p.now) {
		p.warn("MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return nil
	}
	if isActiveByName(cj, jobName(cj, scheduled)) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(scheduled)) {
		return nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			p.normal("JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range slices.Clone(cj.Status.Active) {
			if err := p.deleteJob(ctx, ref.Name, ref.UID); err != nil {
				return fmt.Errorf("could not replace job %s/%s: %w", ref.Namespace, ref.Name, err)
			}
		}
	}
	job, err := p.createJob(ctx, scheduled)
	if job == nil || err != nil {
		return err
	}
	p.addActive(job)
	cj.Status.LastScheduleTime = &metav1.Time{Time: scheduled}
	return nil
}

// createJob creates the job for scheduled. If it exists already because an
// earlier sync created it but could not write status, that job is
// returned; nil if it exists and nothing is to be recorded.
func (p *pass) createJob(ctx context.Context, scheduled time.Time) (*batchv1.Job, error) {
	want, err := newJob(p.cj, scheduled)
	if err != nil {
		return nil, err
	}
	jobs := p.client.BatchV1().Jobs(p.cj.Namespace)
	job, err := jobs.Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		p.normal("SuccessfulCreate", "Created job %v", job.Name)
		return job, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case apierrors.IsAlreadyExists(err):
		existing, err := jobs.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(existing, p.cj) || isActive(p.cj, existing.UID) {
			return nil, nil
		}
		p.log.Info("job already exists", "cronjob", controller.Key(p.cj), "job", existing.Name)
		return existing, nil
	default:
		p.warn("FailedCreate", "Error creating job: %v", err)
		return nil, err
	}
}

// deleteJob deletes a job of the cron job, its pods in the background, and
// its entry in status.active. A job already gone counts as deleted.
func (p *pass) deleteJob(ctx context.Context, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	err := p.client.BatchV1().Jobs(p.cj.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &background,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		p.warn("FailedDelete", "Deleted job: %v", err)
		return err
	}
	if isActive(p.cj, uid) {
		p.dropActive(uid)
	}
	if err == nil {
		p.normal("SuccessfulDelete", "Deleted job %v", name)
	}
	return nil
}

// writeStatus writes the edited status, if it changed. The cached copy can
// be older than the stored one (the previous pass's write not yet seen);
// then the update conflicts, and this pass's edits are replayed onto the
// stored status, so that a job it started is never forgotten.
func (p *pass) writeStatus(ctx context.Context) error {
	if !p.changed {
		return nil
	}
	cronJobs := p.client.BatchV1().CronJobs(p.cj.Namespace)
	_, err := cronJobs.UpdateStatus(ctx, p.cj, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		stored, err := cronJobs.Get(ctx, p.cj.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if stored.UID != p.cj.UID {
			return nil // deleted and created again: a new cron job
		}
		p.replayOnto(stored)
		_, err = cronJobs.UpdateStatus(ctx, stored, metav1.UpdateOptions{})
		return err
	})
}

// replayOnto applies this pass's status edits to a newer copy of the cron
// job: the jobs it added to and removed from status.active, and the later
// of each recorded time.
func (p *pass) replayOnto(stored *batchv1.CronJob) {
	for _, uid := range p.removed {
		removeActive(stored, uid)
	}
	for _, ref := range p.added {
		if !isActive(stored, ref.UID) {
			stored.Status.Active = append(stored.Status.Active, ref)
		}
	}
	stored.Status.LastScheduleTime = later(stored.Status.LastScheduleTime, p.cj.Status.LastScheduleTime)
	stored.Status.LastSuccessfulTime = later(stored.Status.LastSuccessfulTime, p.cj.Status.LastSuccessfulTime)
}

func later(a, b *metav1.Time) *metav1.Time {
	if a == nil || (b != nil && b.After(a.Time)) {
		return b
	}
	return a
}

func (p *pass) normal(reason, format string, args ...interface{}) {
	p.recorder.Eventf(p.cj, corev1.EventTypeNormal, reason, format, args...)
}

func (p *pass) warn(reason, format string, args ...interface{}) {
	p.recorder.Eventf(p.cj, corev1.EventTypeWarning, reason, format, args...)
}
