package cronjob

import (
	"fmt"
	"maps"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")
	jobKind     = batchv1.SchemeGroupVersion.WithKind("Job")
)

// jobName is the name of the job for the start time scheduled: the cron
// job's name and the time in minutes since the epoch, so that the same start
// time can never make two jobs.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// newJob builds the job of cj for the start time scheduled from
// spec.jobTemplate, controlled by cj and annotated with the scheduled time
// in the cron job's time zone (UTC without one).
func newJob(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	zone := "UTC"
	if cj.Spec.TimeZone != nil {
		zone = *cj.Spec.TimeZone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	tmpl := &cj.Spec.JobTemplate
	annotations := maps.Clone(tmpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(cj, scheduled),
			Namespace:       cj.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)},
		},
	}
	tmpl.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}

// jobRef is the reference to job kept in status.active.
func jobRef(job *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind:            jobKind.Kind,
		APIVersion:      jobKind.GroupVersion().String(),
		Namespace:       job.Namespace,
		Name:            job.Name,
		UID:             job.UID,
		ResourceVersion: job.ResourceVersion,
	}
}

// finishedCondition returns Complete or Failed once the job has finished,
// "" while it runs.
func finishedCondition(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func isFinished(job *batchv1.Job) bool {
	return finishedCondition(job) != ""
}

func isActive(cj *batchv1.CronJob, uid types.UID) bool {
	for _, ref := range cj.Status.Active {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func isActiveByName(cj *batchv1.CronJob, name string) bool {
	for _, ref := range cj.Status.Active {
		if ref.Name == name {
			return true
		}
	}
	return false
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	kept := cj.Status.Active[:0:0]
	for _, ref := range cj.Status.Active {
		if ref.UID != uid {
			kept = append(kept, ref)
		}
	}
	cj.Status.Active = kept
}

// oldestFirst orders jobs by status.startTime, jobs not started last, and by
// name between equal start times.
func oldestFirst(jobs []*batchv1.Job) {
	sort.SliceStable(jobs, func(i, j int) bool {
		a, b := jobs[i].Status.StartTime, jobs[j].Status.StartTime
		switch {
		case a == nil || b == nil:
			if (a == nil) != (b == nil) {
				return b == nil
			}
		case !a.Equal(b):
			return a.Before(b)
		}
		return jobs[i].Name < jobs[j].Name
	})
}

// beyondLimit returns the oldest jobs that exceed limit.
func beyondLimit(jobs []*batchv1.Job, limit int32) []*batchv1.Job {
	n := len(jobs) - int(limit)
	if n <= 0 {
		return nil
	}
	sorted := append([]*batchv1.Job(nil), jobs...)
	oldestFirst(sorted)
	return sorted[:n]
}
