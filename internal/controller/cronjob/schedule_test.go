package cronjob

import (
	"errors"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestMain reads schedules without a time zone in UTC, whatever the host's
// zone, so that expected times can be written down.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}

// at parses an RFC 3339 time.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type cronSpec struct {
	schedule string
	zone     string // "" for none
	created  string
	last     string // "" for none
	deadline *int64
}

func (s cronSpec) build(t *testing.T) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "default", CreationTimestamp: metav1.NewTime(at(t, s.created))},
		Spec:       batchv1.CronJobSpec{Schedule: s.schedule, StartingDeadlineSeconds: s.deadline},
	}
	if s.zone != "" {
		cj.Spec.TimeZone = ptr.To(s.zone)
	}
	if s.last != "" {
		cj.Status.LastScheduleTime = &metav1.Time{Time: at(t, s.last)}
	}
	return cj
}

func TestMostRecentScheduleTime(t *testing.T) {
	tests := []struct {
		name        string
		cj          cronSpec
		now         string
		useDeadline bool
		want        string // "" for none
		missed      missed
		err         error
	}{
		{name: "not due yet", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:00:50Z"},
		{name: "first start due", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:01:05Z", want: "2026-01-10T10:01:00Z"},
		{name: "the start at now is due", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:01:00Z", want: "2026-01-10T10:01:00Z"},
		{name: "latest of several missed", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:04:10Z", want: "2026-01-10T10:04:00Z", missed: fewMissed},
		{name: "last schedule time wins over creation", cj: cronSpec{schedule: "@hourly", created: "2026-01-10T07:00:30Z", last: "2026-01-10T10:00:00Z"},
			now: "2026-01-10T10:30:00Z"},
		{name: "next after last schedule time", cj: cronSpec{schedule: "@hourly", created: "2026-01-10T07:00:30Z", last: "2026-01-10T10:00:00Z"},
			now: "2026-01-10T11:00:01Z", want: "2026-01-10T11:00:00Z"},
		{name: "within the starting deadline", cj: cronSpec{schedule: "*/5 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](60)},
			now: "2026-01-10T10:05:30Z", useDeadline: true, want: "2026-01-10T10:05:00Z"},
		{name: "past the starting deadline", cj: cronSpec{schedule: "*/5 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](20)},
			now: "2026-01-10T10:05:30Z", useDeadline: true},
		{name: "deadline ignored when not asked", cj: cronSpec{schedule: "*/5 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](20)},
			now: "2026-01-10T10:05:30Z", want: "2026-01-10T10:05:00Z"},
		{name: "deadline bounds a long outage", cj: cronSpec{schedule: "* * * * *", created: "2026-01-01T00:00:00Z", deadline: ptr.To[int64](200)},
			now: "2026-01-10T10:00:30Z", useDeadline: true, want: "2026-01-10T10:00:00Z", missed: fewMissed},
		{name: "100 missed is still few", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T11:40:30Z", want: "2026-01-10T11:40:00Z", missed: fewMissed},
		{name: "101 missed is many", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T11:41:30Z", want: "2026-01-10T11:41:00Z", missed: manyMissed},
		{name: "days of missed minutes", cj: cronSpec{schedule: "*/1 * * * ?", created: "2025-10-01T00:00:00Z"},
			now: "2026-01-10T10:07:59Z", want: "2026-01-10T10:07:00Z", missed: manyMissed},
		{name: "@every counts from creation", cj: cronSpec{schedule: "@every 2m", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:09:00Z", want: "2026-01-10T10:08:30Z", missed: fewMissed},
		{name: "irregular intervals", cj: cronSpec{schedule: "30 6-16/4 * * 1-5", created: "2026-01-12T06:00:00Z"}, // a Monday
			now: "2026-01-12T15:00:00Z", want: "2026-01-12T14:30:00Z", missed: fewMissed},
		{name: "time zone", cj: cronSpec{schedule: "0 9 * * *", zone: "Asia/Tokyo", created: "2026-01-10T00:00:30Z"},
			now: "2026-01-11T00:00:10Z", want: "2026-01-11T00:00:00Z"},
		{name: "time zone after a daylight saving change", cj: cronSpec{schedule: "0 9 * * *", zone: "America/New_York", created: "2026-03-07T15:00:00Z"},
			now: "2026-03-08T13:00:05Z", want: "2026-03-08T13:00:00Z"},
		{name: "time zone before that change", cj: cronSpec{schedule: "0 9 * * *", zone: "America/New_York", created: "2026-03-06T15:00:00Z"},
			now: "2026-03-07T14:00:05Z", want: "2026-03-07T14:00:00Z"},
		{name: "a date that never comes", cj: cronSpec{schedule: "0 0 31 2 *", created: "2026-01-10T10:00:30Z"},
			now: "2026-03-10T10:00:00Z", err: errNeverRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := tt.cj.build(t)
			sched, err := parseSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			_, got, missed, err := mostRecentScheduleTime(cj, at(t, tt.now), sched, tt.useDeadline)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if s := formatTime(got); s != tt.want {
				t.Errorf("most recent time %q, want %q", s, tt.want)
			}
			if missed != tt.missed {
				t.Errorf("missed %v, want %v", missed, tt.missed)
			}
		})
	}
}

func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func TestNextWakeUp(t *testing.T) {
	tests := []struct {
		name string
		cj   cronSpec
		now  string
		want time.Duration
		ok   bool
	}{
		{name: "first start", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:00:40Z", want: 20*time.Second + wakeUpPadding, ok: true},
		{name: "after a start", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z", last: "2026-01-10T10:01:00Z"},
			now: "2026-01-10T10:01:02Z", want: 58*time.Second + wakeUpPadding, ok: true},
		{name: "a start is due now: the one after", cj: cronSpec{schedule: "*/5 * * * *", created: "2026-01-10T10:00:30Z", last: "2026-01-10T10:00:00Z"},
			now: "2026-01-10T10:05:01Z", want: 4*time.Minute + 59*time.Second + wakeUpPadding, ok: true},
		{name: "after missed starts", cj: cronSpec{schedule: "* * * * *", created: "2026-01-10T10:00:30Z", last: "2026-01-10T10:01:00Z"},
			now: "2026-01-10T10:05:30Z", want: 30*time.Second + wakeUpPadding, ok: true},
		{name: "the deadline does not matter", cj: cronSpec{schedule: "@hourly", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](10)},
			now: "2026-01-10T11:30:00Z", want: 30*time.Minute + wakeUpPadding, ok: true},
		{name: "time zone", cj: cronSpec{schedule: "0 9 * * *", zone: "Asia/Tokyo", created: "2026-01-10T10:00:00Z"},
			now: "2026-01-10T12:00:00Z", want: 12*time.Hour + wakeUpPadding, ok: true},
		{name: "never", cj: cronSpec{schedule: "0 0 30 2 *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T12:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := tt.cj.build(t)
			sched, err := parseSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			now := at(t, tt.now)
			wake, ok := nextWakeUp(cj, now, sched)
			if ok != tt.ok || (ok && wake.Sub(now) != tt.want) {
				t.Errorf("nextWakeUp = %v, %v: %v after now; want %v after now", wake, ok, wake.Sub(now), tt.want)
			}
		})
	}
}

func TestTimeToRunAndDeadline(t *testing.T) {
	tests := []struct {
		name string
		cj   cronSpec
		now  string
		want string
	}{
		{name: "on time", cj: cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](30)},
			now: "2026-01-10T10:10:29Z", want: "2026-01-10T10:10:00Z"},
		{name: "deadline reached: the start time is no longer after the window start", cj: cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](30)},
			now: "2026-01-10T10:10:30Z"},
		{name: "deadline passed", cj: cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](30)},
			now: "2026-01-10T10:10:31Z"},
		{name: "no deadline: any delay", cj: cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z"},
			now: "2026-01-10T10:19:59Z", want: "2026-01-10T10:10:00Z"},
		{name: "already started", cj: cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z", last: "2026-01-10T10:10:00Z"},
			now: "2026-01-10T10:19:59Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := tt.cj.build(t)
			sched, err := parseSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			now := at(t, tt.now)
			got, _, err := timeToRun(cj, now, sched)
			if err != nil {
				t.Fatal(err)
			}
			if s := formatTime(got); s != tt.want {
				t.Fatalf("time to run %q, want %q", s, tt.want)
			}
			if got != nil && tooLate(cj, *got, now) {
				t.Errorf("%v is too late at %v", got, now)
			}
		})
	}
	cj := cronSpec{schedule: "*/10 * * * *", created: "2026-01-10T10:00:30Z", deadline: ptr.To[int64](30)}.build(t)
	if !tooLate(cj, at(t, "2026-01-10T10:10:00Z"), at(t, "2026-01-10T10:10:31Z")) {
		t.Error("31s after the start time is not too late with a 30s deadline")
	}
	cj.Spec.StartingDeadlineSeconds = nil
	if tooLate(cj, at(t, "2026-01-10T10:10:00Z"), at(t, "2027-01-10T10:10:31Z")) {
		t.Error("too late without a deadline")
	}
}

func TestScheduleInZone(t *testing.T) {
	tests := []struct {
		schedule string
		zone     *string
		want     string
	}{
		{"0 9 * * *", nil, "0 9 * * *"},
		{"0 9 * * *", ptr.To("Europe/Paris"), "TZ=Europe/Paris 0 9 * * *"},
		{"@daily", ptr.To("UTC"), "TZ=UTC @daily"},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", ptr.To("Europe/Paris"), "CRON_TZ=Asia/Tokyo 0 9 * * *"},
		{"0 9 * * *", ptr.To("Mars/Olympus"), "0 9 * * *"},
	}
	for _, tt := range tests {
		cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: tt.schedule, TimeZone: tt.zone}}
		if got := scheduleInZone(cj); got != tt.want {
			t.Errorf("scheduleInZone(%q, %v) = %q, want %q", tt.schedule, ptr.Deref(tt.zone, "<nil>"), got, tt.want)
		}
	}
	if _, err := parseSchedule(&batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "0 9 * *"}}); err == nil {
		t.Error("a four-field schedule parsed")
	}
}
