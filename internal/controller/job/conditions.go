package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// isFinished: the job has its final Complete or Failed condition.
func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// managedHere: spec.managedBy leaves the job to this controller.
func managedHere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy == nil || *job.Spec.ManagedBy == controllerName
}

func isSuspended(job *batchv1.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}

func findCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == t {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

func newCondition(t batchv1.JobConditionType, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
	}
}

// setCondition makes the job's condition of type t say status, reason and
// message, and reports whether that changed anything. A condition that
// does not exist is not added as False.
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	cond := newCondition(t, reason, message, now)
	cond.Status = status
	if cur := findCondition(job, t); cur != nil {
		if cur.Status == status && cur.Reason == reason && cur.Message == message {
			return false
		}
		*cur = *cond
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	job.Status.Conditions = append(job.Status.Conditions, *cond)
	return true
}

// withSpecDefaults fills in the defaults the apiserver applies, for jobs
// that somehow lack them.
func withSpecDefaults(job *batchv1.Job) *batchv1.Job {
	if job.Spec.Parallelism == nil {
		job.Spec.Parallelism = int32Ptr(1)
	}
	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = int32Ptr(6)
	}
	if isIndexed(job) && job.Spec.Completions == nil {
		job.Spec.Completions = int32Ptr(*job.Spec.Parallelism)
	}
	return job
}

func int32Ptr(v int32) *int32 { return &v }

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func uidSet(uids []types.UID) sets.Set[string] {
	s := sets.New[string]()
	for _, u := range uids {
		s.Insert(string(u))
	}
	return s
}
