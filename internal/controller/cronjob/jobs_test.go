package cronjob

import (
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNewJob(t *testing.T) {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "ops", UID: "cj-uid"},
		Spec: batchv1.CronJobSpec{
			Schedule: "0 9 * * *",
			TimeZone: ptr.To("Asia/Tokyo"),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}, Annotations: map[string]string{"note": "nightly"}},
				Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
	scheduled := at(t, "2026-01-11T00:00:00Z")
	job, err := newJob(cj, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	if want := "backup-29468160"; job.Name != want || job.Namespace != "ops" {
		t.Errorf("job %s/%s, want ops/%s", job.Namespace, job.Name, want)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-01-11T09:00:00+09:00" {
		t.Errorf("scheduled timestamp %q, want the time in the cron job's zone", got)
	}
	if job.Labels["app"] != "backup" || job.Annotations["note"] != "nightly" {
		t.Errorf("template metadata not copied: %v %v", job.Labels, job.Annotations)
	}
	if _, leaked := cj.Spec.JobTemplate.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; leaked {
		t.Error("the template's annotations were modified")
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.UID != "cj-uid" || ref.Kind != "CronJob" || ref.APIVersion != "batch/v1" || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v", ref)
	}
	if !reflect.DeepEqual(job.Spec, cj.Spec.JobTemplate.Spec) {
		t.Errorf("spec %+v, want the template's", job.Spec)
	}
	job.Spec.Template.Spec.Containers[0].Image = "changed"
	if cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Error("the job shares the template's spec")
	}

	cj.Spec.TimeZone = nil
	cj.Spec.JobTemplate.ObjectMeta = metav1.ObjectMeta{}
	job, _ = newJob(cj, scheduled)
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-01-11T00:00:00Z" {
		t.Errorf("scheduled timestamp %q without a zone, want UTC", got)
	}
}

func TestBeyondLimit(t *testing.T) {
	started := func(name string, minute int) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if minute >= 0 {
			j.Status.StartTime = &metav1.Time{Time: at(t, "2026-01-10T10:00:00Z").Add(time.Duration(minute) * time.Minute)}
		}
		return j
	}
	jobs := []*batchv1.Job{started("d", 3), started("never", -1), started("b", 1), started("a", 1), started("c", 2)}
	tests := []struct {
		limit int32
		want  []string
	}{
		{5, nil},
		{9, nil},
		{4, []string{"a"}},
		{2, []string{"a", "b", "c"}},
		{0, []string{"a", "b", "c", "d", "never"}},
	}
	for _, tt := range tests {
		var got []string
		for _, j := range beyondLimit(jobs, tt.limit) {
			got = append(got, j.Name)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("limit %d: deleting %v, want %v", tt.limit, got, tt.want)
		}
	}
	if jobs[0].Name != "d" {
		t.Error("beyondLimit reordered its argument")
	}
}

func TestActiveList(t *testing.T) {
	cj := &batchv1.CronJob{Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "a", UID: "1"}, {Name: "b", UID: "2"}}}}
	if !isActive(cj, "2") || isActive(cj, "3") || !isActiveByName(cj, "a") || isActiveByName(cj, "c") {
		t.Fatal("lookups wrong")
	}
	before := cj.Status.Active
	removeActive(cj, "1")
	if len(cj.Status.Active) != 1 || cj.Status.Active[0].Name != "b" || before[0].Name != "a" {
		t.Errorf("after removing a: %v (the original list must be left alone: %v)", cj.Status.Active, before)
	}
}

func TestFinishedCondition(t *testing.T) {
	job := &batchv1.Job{}
	if isFinished(job) {
		t.Error("a job without conditions is finished")
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionFalse}}
	if isFinished(job) {
		t.Error("a job with Complete=False is finished")
	}
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue})
	if finishedCondition(job) != batchv1.JobFailed {
		t.Errorf("condition %q, want Failed", finishedCondition(job))
	}
}

// A pass that worked from a stale copy replays its edits onto the stored
// status: the job it started is kept, the one it saw finish is dropped, and
// neither time goes back.
func TestReplayOntoStoredStatus(t *testing.T) {
	t0 := metav1.Unix(600, 0)
	t1 := metav1.Unix(660, 0)
	stale := &batchv1.CronJob{Status: batchv1.CronJobStatus{
		Active:           []corev1.ObjectReference{{Name: "old", UID: "1"}},
		LastScheduleTime: &t0,
	}}
	p := &pass{cj: stale}
	p.dropActive("1")
	p.addActive(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "3"}})
	p.cj.Status.LastScheduleTime = &t1

	stored := &batchv1.CronJob{Status: batchv1.CronJobStatus{
		Active:             []corev1.ObjectReference{{Name: "old", UID: "1"}, {Name: "other", UID: "2"}},
		LastScheduleTime:   &t0,
		LastSuccessfulTime: &t1,
	}}
	p.replayOnto(stored)
	var names []string
	for _, ref := range stored.Status.Active {
		names = append(names, ref.Name)
	}
	if strings.Join(names, ",") != "other,new" {
		t.Errorf("active %v, want other,new", names)
	}
	if !stored.Status.LastScheduleTime.Equal(&t1) || !stored.Status.LastSuccessfulTime.Equal(&t1) {
		t.Errorf("times %v %v, want both %v", stored.Status.LastScheduleTime, stored.Status.LastSuccessfulTime, t1)
	}
}
