package cronjob

import (
	"errors"
	"strings"
	"time"
	_ "time/tzdata" // spec.timeZone must resolve on hosts without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

const (
	// wakeUpPadding is added to each planned wake-up so that the schedule
	// time has surely passed when the cron job is synced again, even with a
	// little clock skew.
	wakeUpPadding = 100 * time.Millisecond
	// manyMissedLimit is how many missed start times are tolerated before the
	// controller warns (TooManyMissedTimes) about its clock or the deadline.
	manyMissedLimit = 100
)

// errNeverRuns is returned for a schedule that parses but whose start times
// are less than a second apart or never come (31 February).
var errNeverRuns = errors.New("time difference between two schedules is less than 1 second")

// missed says how many start times passed since the last one.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

// parseSchedule reads spec.schedule in spec.timeZone. Without a time zone
// the schedule is read in the controller's local zone, or in the zone of a
// TZ=/CRON_TZ= prefix that predates the timeZone field.
func parseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	return cron.ParseStandard(scheduleInZone(cj))
}

// scheduleInZone prefixes the schedule with spec.timeZone in the form the
// cron parser understands.
func scheduleInZone(cj *batchv1.CronJob) string {
	if cj.Spec.TimeZone == nil || hasZonePrefix(cj.Spec.Schedule) {
		return cj.Spec.Schedule
	}
	if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
		return cj.Spec.Schedule
	}
	return "TZ=" + *cj.Spec.TimeZone + " " + cj.Spec.Schedule
}

func hasZonePrefix(schedule string) bool {
	return strings.Contains(schedule, "TZ")
}

// windowStart is the time after which start times count as unmet: the last
// schedule time, else the creation time, moved up to now minus
// startingDeadlineSeconds when useDeadline is set and that is later.
func windowStart(cj *batchv1.CronJob, now time.Time, useDeadline bool) time.Time {
	start := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		start = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; useDeadline && d != nil {
		if deadline := now.Add(-time.Duration(*d) * time.Second); deadline.After(start) {
			start = deadline
		}
	}
	return start
}

// mostRecentScheduleTime returns the window start (see windowStart), the
// latest start time in (window start, now] or nil if there is none, and how
// many start times were missed. So as not to walk through years of missed
// minutes, it jumps close to now by the interval between the first two start
// times and walks forward from one interval before that point.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, useDeadline bool) (time.Time, *time.Time, missed, error) {
	start := windowStart(cj, now, useDeadline)
	first := sched.Next(start)
	second := sched.Next(first)
	if now.Before(first) {
		return start, nil, noneMissed, nil
	}
	if now.Before(second) {
		return start, &first, noneMissed, nil
	}
	interval := int64(second.Sub(first).Round(time.Second).Seconds())
	if interval < 1 {
		return start, nil, noneMissed, errNeverRuns
	}
	count := int64(now.Sub(first).Seconds())/interval + 1
	var latest time.Time
	from := first.Add(time.Duration((count-2)*interval) * time.Second)
	for t := sched.Next(from); !t.After(now); t = sched.Next(t) {
		latest = t
	}
	howMany := fewMissed
	if count > manyMissedLimit {
		howMany = manyMissed
	}
	if latest.IsZero() {
		return start, nil, howMany, nil
	}
	return start, &latest, howMany, nil
}

// timeToRun returns the start time a job is due for now, within
// startingDeadlineSeconds, or nil when none is due.
func timeToRun(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (*time.Time, missed, error) {
	_, latest, howMany, err := mostRecentScheduleTime(cj, now, sched, true)
	if latest == nil || latest.After(now) {
		return nil, howMany, err
	}
	return latest, howMany, err
}

// nextWakeUp is when the cron job must be synced again: just after the
// first start time that follows the last one due at now. ok is false if the
// schedule never runs again.
func nextWakeUp(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (wake time.Time, ok bool) {
	start, latest, howMany, err := mostRecentScheduleTime(cj, now, sched, false)
	from := start
	switch {
	case err != nil:
		from = now
	case latest != nil:
		from = *latest
	case howMany != noneMissed:
		from = now
	}
	next := sched.Next(from)
	if next.IsZero() {
		return time.Time{}, false
	}
	return next.Add(wakeUpPadding), true
}

// tooLate reports whether the job for scheduled may no longer start.
func tooLate(cj *batchv1.CronJob, scheduled, now time.Time) bool {
	d := cj.Spec.StartingDeadlineSeconds
	return d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now)
}
