// Package job is the Job controller of orch's controller manager: it runs
// batch/v1 Jobs to completion as kube-controller-manager does.
//
// For each Job the loop
//
//   - claims pods: adopts the orphans its selector matches and releases
//     the pods it controls that no longer match;
//   - creates pods from spec.template (with the controller reference, the
//     template's labels, which carry batch.kubernetes.io/controller-uid and
//     batch.kubernetes.io/job-name, and the batch.kubernetes.io/job-tracking
//     finalizer), parallelism at a time and never more than the completions
//     still missing; a Job without completions is a work queue: it is done
//     when one pod has succeeded and the others have finished;
//   - for Indexed Jobs gives each pod an index: name <job>-<index>-xxxxx,
//     hostname <job>-<index>, the batch.kubernetes.io/job-completion-index
//     annotation and label, and JOB_COMPLETION_INDEX in every container;
//     status.completedIndexes and status.failedIndexes are interval lists
//     such as "0-2,5"; backoffLimitPerIndex, maxFailedIndexes and
//     successPolicy are honoured;
//   - counts finished pods exactly once: their UIDs go to
//     status.uncountedTerminatedPods, then their finalizer is removed, then
//     they move into status.succeeded and status.failed;
//   - waits before replacing failed pods (10s, 20s, 40s, … up to 10 min
//     after consecutive failures, on the injected clock);
//   - fails the Job when failures pass backoffLimit (container restarts
//     count with restartPolicy OnFailure), when activeDeadlineSeconds
//     passes, when a podFailurePolicy FailJob rule matches, or when too
//     many indexes failed: first the FailureTarget condition, active pods
//     deleted, then Failed once no pod is left running;
//   - completes it with SuccessCriteriaMet, then Complete and
//     completionTime once every pod is counted;
//   - suspends it (pods deleted, condition Suspended) and resumes it
//     (startTime reset);
//   - writes status.active, ready and terminating; with
//     podReplacementPolicy Failed a pod is replaced only once it has failed,
//     not while it terminates.
//
// Jobs whose spec.managedBy names another controller are left alone.
// Deleting a Job is left to the garbage collector; the controller removes
// its finalizer from the pods of Jobs that are gone or finished.
//
// Events are recorded as "job-controller": SuccessfulCreate,
// FailedCreate, SuccessfulDelete, FailedDelete, Completed, Suspended,
// Resumed, and the reason of a failure (BackoffLimitExceeded,
// DeadlineExceeded, PodFailurePolicy, MaxFailedIndexesExceeded,
// FailedIndexes).
//
// Usage:
//
//	c := job.New(cctx)                // registers informers
//	cctx.Informers.StartWithContext(ctx)  // the caller starts the factory
//	err := c.Start(ctx)               // blocks until ctx ends
package job
