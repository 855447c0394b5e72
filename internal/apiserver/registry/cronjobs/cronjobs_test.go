package cronjobs

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func cronJob(schedule string) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "backup", Image: "busybox"}},
			}}}},
		},
	}
}

func TestDefault(t *testing.T) {
	cj := cronJob("*/5 * * * *")
	Resource().Default(cj)
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults: %+v", s)
	}
	js := s.JobTemplate.Spec
	if js.BackoffLimit != nil || js.Completions != nil {
		t.Errorf("job defaults leaked into the template: %+v", js)
	}
	if js.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Error("pod template not defaulted")
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name   string
		change func(*batchv1.CronJob)
		want   []string
	}{
		{"valid", func(*batchv1.CronJob) {}, nil},
		{"macro", func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }, nil},
		{"time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Paris") }, nil},
		{"no schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "" }, []string{"FieldValueRequired spec.schedule"}},
		{"six fields", func(c *batchv1.CronJob) { c.Spec.Schedule = "0 * * * * *" }, []string{"FieldValueInvalid spec.schedule"}},
		{"TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }, []string{"FieldValueInvalid spec.schedule"}},
		{"unknown zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"local zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Local") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"zone of the conformance test", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("bad-time-zone") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"empty zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"zone path", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/../Paris") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"zone with spaces", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To(" Europe/Paris") }, []string{"FieldValueInvalid spec.timeZone"}},
		{"zone with daylight saving", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("America/New_York") }, nil},
		{"UTC", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("UTC") }, nil},
		{"CRON_TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "CRON_TZ=Asia/Tokyo 0 9 * * *" }, []string{"FieldValueInvalid spec.schedule"}},
		{"unknown TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=Nowhere/Else 0 9 * * *" }, []string{"FieldValueInvalid spec.schedule", "FieldValueInvalid spec.schedule"}},
		{"question mark", func(c *batchv1.CronJob) { c.Spec.Schedule = "*/1 * * * ?" }, nil},
		{"every", func(c *batchv1.CronJob) { c.Spec.Schedule = "@every 90m" }, nil},
		{"a date that never comes parses", func(c *batchv1.CronJob) { c.Spec.Schedule = "0 0 31 2 *" }, nil},
		{"minute out of range", func(c *batchv1.CronJob) { c.Spec.Schedule = "61 * * * *" }, []string{"FieldValueInvalid spec.schedule"}},
		{"unknown macro", func(c *batchv1.CronJob) { c.Spec.Schedule = "@fortnightly" }, []string{"FieldValueInvalid spec.schedule"}},
		{"bad concurrency", func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }, []string{"FieldValueNotSupported spec.concurrencyPolicy"}},
		{"selector", func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, []string{"FieldValueInvalid spec.jobTemplate.spec.selector"}},
		{"restart always", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "" }, []string{"FieldValueRequired spec.jobTemplate.spec.template.spec.restartPolicy"}},
		{"long name", func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) }, []string{"FieldValueInvalid metadata.name"}},
		{"negative history", func(c *batchv1.CronJob) { c.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1) }, []string{"FieldValueInvalid spec.failedJobsHistoryLimit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cronJob("0 3 * * *")
			tt.change(c)
			registrytest.ExpectErrors(t, registrytest.Validate(r, c, nil), tt.want...)
		})
	}
	errs := registrytest.Validate(r, cronJob("TZ=UTC 0 * * * *"), nil)
	registrytest.ExpectDetail(t, errs, "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
	errs = registrytest.Validate(r, cronJob("* * *"), nil)
	registrytest.ExpectDetail(t, errs, "spec.schedule", "expected exactly 5 fields, found 3: [* * *]")
	bad := cronJob("0 3 * * *")
	bad.Spec.TimeZone = ptr.To("Europe/../Paris")
	registrytest.ExpectDetail(t, registrytest.Validate(r, bad, nil), "spec.timeZone", "unknown time zone Europe/../Paris")
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		schedule string
		err      string // "" when valid
	}{
		{"* * * * *", ""},
		{"*/15 0-6 1,15 JAN-jun mon-FRI", ""},
		{"0 0 ? * SUN", ""},
		{"5/10 * * * *", ""},
		{"@midnight", ""},
		{"@every 1h30m", ""},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", ""},
		{"", "empty spec string"},
		{"60 * * * *", "end of range (60) above maximum (59): 60"},
		{"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
		{"* * * * 7", "end of range (7) above maximum (6): 7"},
		{"5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"},
		{"*/0 * * * *", "step of range should be a positive number: */0"},
		{"1-2-3 * * * *", "too many hyphens: 1-2-3"},
		{"1/2/3 * * * *", "too many slashes: 1/2/3"},
		{"x * * * *", "failed to parse int from x"},
		{"@fortnightly", "unrecognized descriptor: @fortnightly"},
		{"@every soon", "failed to parse duration @every soon"},
		{"TZ=Nowhere/Else * * * * *", "provided bad location Nowhere/Else"},
	}
	for _, tt := range tests {
		err := parseSchedule(tt.schedule)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: unexpected error %v", tt.schedule, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.schedule, err, tt.err)
		}
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.ShortNames[0] != "cj" || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	now := time.Now()
	cj := cronJob("0 3 * * *")
	r.Default(cj)
	cj.CreationTimestamp = metav1.NewTime(now.Add(-72 * time.Hour))
	cj.Spec.TimeZone = ptr.To("Europe/Paris")
	cj.Status.Active = []corev1.ObjectReference{{Name: "backup-1"}}
	cj.Status.LastScheduleTime = &metav1.Time{Time: now.Add(-5 * time.Hour)}
	row := r.Row(cj, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"backup", "0 3 * * *", "Europe/Paris", "False", int64(1), "5h", "3d", "backup", "busybox", "<none>"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	if row := r.Row(cronJob("@daily"), now); row[2] != "<none>" || row[3] != "<unset>" || row[5] != "<none>" {
		t.Errorf("bare row = %v", row)
	}
}
