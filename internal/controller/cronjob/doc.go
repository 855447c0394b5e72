// Package cronjob is the CronJob controller of orch's controller manager,
// with the behaviour of kube-controller-manager's (the v2 controller).
//
// For each CronJob the loop
//
//   - reads spec.schedule (five cron fields or a macro such as @hourly,
//     parsed by robfig/cron) in spec.timeZone, or in the controller's local
//     zone without one;
//   - finds the latest start time that has passed since status.lastScheduleTime
//     (or the creation time), no older than startingDeadlineSeconds, and
//     creates its Job unless spec.suspend is set: named
//     <cronjob>-<start time in minutes since the epoch>, so that one start
//     time never makes two jobs, with the labels and annotations of
//     spec.jobTemplate.metadata, the batch.kubernetes.io/cronjob-scheduled-timestamp
//     annotation and a controller ownerReference;
//   - applies spec.concurrencyPolicy when a job is still running: Allow
//     starts another, Forbid skips the start (JobAlreadyActive), Replace
//     deletes the running jobs first;
//   - keeps status.active (references to the running jobs),
//     status.lastScheduleTime and status.lastSuccessfulTime, and drops jobs
//     that finished (SawCompletedJob) or vanished (MissingJob);
//   - deletes the oldest finished jobs beyond successfulJobsHistoryLimit and
//     failedJobsHistoryLimit, with background propagation;
//   - plans its next sync just after the next start time on the injected
//     clock (controller.Delayer) rather than polling.
//
// It records events as "cronjob-controller" with upstream's reasons:
// SuccessfulCreate, FailedCreate, SawCompletedJob, SuccessfulDelete,
// FailedDelete, MissingJob, UnexpectedJob, JobAlreadyActive, MissSchedule,
// TooManyMissedTimes (more than 100 start times missed), UnknownTimeZone,
// UnparseableSchedule, InvalidSchedule and UnsupportedSchedule.
//
// Usage:
//
//	c := cronjob.New(cctx)            // registers informers
//	cctx.Informers.StartWithContext(ctx)  // the caller starts the factory
//	err := c.Start(ctx)               // blocks until ctx ends
package cronjob
