package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

func TestCronJobStartsAJobAtEachStartTime(t *testing.T) {
	c := startCluster(t)
	cj := newCronJob("hello", "*/1 * * * ?", batchv1.AllowConcurrent)
	cj.Spec.JobTemplate.Labels = map[string]string{"team": "ops"}
	cj.Spec.JobTemplate.Annotations = map[string]string{"note": "hi"}
	cj = c.create(cj)
	tick := ticks(t, cj, 2)
	first, second := nameAt(cj, tick[0]), nameAt(cj, tick[1])

	c.advanceTo(tick[0].Add(time.Second))
	envtest.Eventually(t, "the first job and status", func() (bool, error) {
		got := c.cronJob("hello")
		return sameNames(c.jobNames(cj), first) && sameNames(activeNames(got), first) &&
			got.Status.LastScheduleTime != nil && got.Status.LastScheduleTime.Time.Equal(tick[0]), nil
	})
	job := c.job(first)
	if job.Labels["team"] != "ops" || job.Annotations["note"] != "hi" {
		t.Errorf("template metadata not copied: %v %v", job.Labels, job.Annotations)
	}
	if got, want := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation], tick[0].UTC().Format(time.RFC3339); got != want {
		t.Errorf("scheduled timestamp %q, want %q", got, want)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != cj.UID || ref.Kind != "CronJob" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v", job.OwnerReferences)
	}
	ref := c.cronJob("hello").Status.Active[0]
	if ref.Kind != "Job" || ref.APIVersion != "batch/v1" || ref.Namespace != "default" || ref.UID != job.UID || ref.ResourceVersion == "" {
		t.Errorf("active reference %+v", ref)
	}

	// Allow: the next start time starts another job beside the running one.
	c.advanceTo(tick[1].Add(time.Second))
	envtest.Eventually(t, "two active jobs", func() (bool, error) {
		got := c.cronJob("hello")
		return sameNames(activeNames(got), first, second) && got.Status.LastScheduleTime.Time.Equal(tick[1]), nil
	})

	// The first one completes: it leaves status.active and sets lastSuccessfulTime.
	done := tick[1].Add(20 * time.Second).Truncate(time.Second)
	c.finish(first, true, tick[0], done)
	envtest.Eventually(t, "the completed job to leave status.active", func() (bool, error) {
		got := c.cronJob("hello")
		return sameNames(activeNames(got), second) && got.Status.LastSuccessfulTime != nil && got.Status.LastSuccessfulTime.Time.Equal(done), nil
	})
	envtest.Eventually(t, "events", func() (bool, error) {
		return c.hasEvent("hello", "Normal SuccessfulCreate Created job "+first) &&
			c.hasEvent("hello", "Normal SuccessfulCreate Created job "+second) &&
			c.hasEvent("hello", "Normal SawCompletedJob Saw completed job: "+first+", condition: Complete"), nil
	})
	if names := c.jobNames(cj); !sameNames(names, first, second) {
		t.Errorf("jobs %v, want %s and %s", names, first, second)
	}
	c.noEventWith("hello", "UnexpectedJob", "MissingJob", "FailedCreate")
}

func TestForbidSkipsAStartWhileAJobRuns(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("forbid", "* * * * *", batchv1.ForbidConcurrent))
	tick := ticks(t, cj, 2)
	first, second := nameAt(cj, tick[0]), nameAt(cj, tick[1])

	c.advanceTo(tick[0].Add(time.Second))
	envtest.Eventually(t, "the first job", func() (bool, error) { return sameNames(activeNames(c.cronJob("forbid")), first), nil })
	c.advanceTo(tick[1].Add(time.Second))
	envtest.Eventually(t, "JobAlreadyActive", func() (bool, error) {
		return c.hasEvent("forbid", "Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"), nil
	})
	if names := c.jobNames(cj); !sameNames(names, first) {
		t.Fatalf("jobs %v while %s runs, want only it", names, first)
	}

	// Once it has finished, the skipped start runs late (no deadline is set).
	c.finish(first, false, tick[0], tick[1].Add(5*time.Second))
	envtest.Eventually(t, "the skipped start to run", func() (bool, error) {
		got := c.cronJob("forbid")
		return sameNames(activeNames(got), second) && got.Status.LastScheduleTime.Time.Equal(tick[1]), nil
	})
	if got := c.cronJob("forbid").Status.LastSuccessfulTime; got != nil {
		t.Errorf("lastSuccessfulTime %v after a failed job", got)
	}
	c.noEventWith("forbid", "UnexpectedJob", "MissingJob")
}

func TestReplaceDeletesTheRunningJob(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("replace", "* * * * *", batchv1.ReplaceConcurrent))
	tick := ticks(t, cj, 2)
	first, second := nameAt(cj, tick[0]), nameAt(cj, tick[1])

	c.advanceTo(tick[0].Add(time.Second))
	envtest.Eventually(t, "the first job", func() (bool, error) { return sameNames(activeNames(c.cronJob("replace")), first), nil })
	c.advanceTo(tick[1].Add(time.Second))
	envtest.Eventually(t, "the first job replaced", func() (bool, error) {
		return sameNames(activeNames(c.cronJob("replace")), second) && sameNames(c.jobNames(cj), second), nil
	})
	if _, err := c.client.BatchV1().Jobs("default").Get(bg, first, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the replaced job: %v, want NotFound", err)
	}
	envtest.Eventually(t, "events", func() (bool, error) {
		return c.hasEvent("replace", "Normal SuccessfulDelete Deleted job "+first) &&
			c.hasEvent("replace", "Normal SuccessfulCreate Created job "+second), nil
	})
	c.noEventWith("replace", "UnexpectedJob", "MissingJob", "FailedDelete")
}

func TestSuspendedCronJobStartsNothingUntilResumed(t *testing.T) {
	c := startCluster(t)
	cj := newCronJob("paused", "* * * * *", batchv1.AllowConcurrent)
	cj.Spec.Suspend = ptr.To(true)
	cj = c.create(cj)
	tick := ticks(t, cj, 2)

	// No sync is planned while suspended; move past two start times anyway.
	c.clock.SetTime(tick[0].Add(time.Second))
	c.clock.SetTime(tick[1].Add(time.Second))
	// A job the controller did not start makes it sync now, and say so.
	foreign, err := newJob(cj, tick[0])
	if err != nil {
		t.Fatal(err)
	}
	foreign.Name = "paused-by-hand"
	if _, err := c.client.BatchV1().Jobs("default").Create(bg, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "a sync while suspended", func() (bool, error) {
		return c.hasEvent("paused", "Warning UnexpectedJob Saw a job that the controller did not create or forgot: paused-by-hand"), nil
	})
	if names := c.jobNames(cj); !sameNames(names, "paused-by-hand") {
		t.Fatalf("jobs %v while suspended", names)
	}
	if err := c.client.BatchV1().Jobs("default").Delete(bg, "paused-by-hand", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got := c.cronJob("paused")
	got.Spec.Suspend = ptr.To(false)
	if _, err := c.client.BatchV1().CronJobs("default").Update(bg, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Resumed, it runs the latest missed start only.
	latest := nameAt(cj, tick[1])
	envtest.Eventually(t, "the latest missed start to run", func() (bool, error) {
		return sameNames(c.jobNames(cj), latest) && sameNames(activeNames(c.cronJob("paused")), latest), nil
	})
}

func TestHistoryLimitsDeleteTheOldestFinishedJobs(t *testing.T) {
	c := startCluster(t)
	cj := newCronJob("history", "* * * * *", batchv1.AllowConcurrent)
	cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
	cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	cj = c.create(cj)
	tick := ticks(t, cj, 4)
	names := make([]string, 4)
	for i, at := range tick {
		names[i] = nameAt(cj, at)
		c.advanceTo(at.Add(time.Second))
		envtest.Eventually(t, names[i], func() (bool, error) {
			return sameNames(activeNames(c.cronJob("history")), names[i]), nil
		})
		c.finish(names[i], i < 2, at, at.Add(10*time.Second))
		envtest.Eventually(t, names[i]+" to finish", func() (bool, error) { return len(c.cronJob("history").Status.Active) == 0, nil })
	}
	// Two succeeded and two failed; one of each is kept, the newest.
	envtest.Eventually(t, "the oldest finished jobs deleted", func() (bool, error) {
		return sameNames(c.jobNames(cj), names[1], names[3]), nil
	})
	envtest.Eventually(t, "events", func() (bool, error) {
		return c.hasEvent("history", "Normal SuccessfulDelete Deleted job "+names[0]) &&
			c.hasEvent("history", "Normal SuccessfulDelete Deleted job "+names[2]), nil
	})
	if got := c.cronJob("history").Status.LastSuccessfulTime; got == nil || !got.Time.Equal(tick[1].Add(10*time.Second)) {
		t.Errorf("lastSuccessfulTime %v, want %v", got, tick[1].Add(10*time.Second))
	}
	c.noEventWith("history", "UnexpectedJob", "MissingJob", "FailedDelete")
}

func TestDeletedActiveJobLeavesStatus(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("gone", "* * * * *", batchv1.ForbidConcurrent))
	tick := ticks(t, cj, 1)
	name := nameAt(cj, tick[0])
	c.advanceTo(tick[0].Add(time.Second))
	envtest.Eventually(t, "the job", func() (bool, error) { return sameNames(activeNames(c.cronJob("gone")), name), nil })
	if err := c.client.BatchV1().Jobs("default").Delete(bg, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "status.active emptied", func() (bool, error) {
		return len(c.cronJob("gone").Status.Active) == 0 && c.hasEvent("gone", "Normal MissingJob Active job went missing: "+name), nil
	})
	// The start time was handled; it is not run again.
	if got := c.cronJob("gone").Status.LastScheduleTime; got == nil || !got.Time.Equal(tick[0]) {
		t.Errorf("lastScheduleTime %v, want %v", got, tick[0])
	}
	if names := c.jobNames(cj); len(names) != 0 {
		t.Errorf("jobs %v after deleting the only one", names)
	}
}

func TestStartingDeadlineSkipsLateStarts(t *testing.T) {
	c := startCluster(t)
	cj := newCronJob("deadline", "* * * * *", batchv1.AllowConcurrent)
	cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
	cj = c.create(cj)
	tick := ticks(t, cj, 2)

	// Woken 30s after the first start time: too late, nothing starts, and the
	// next sync is planned for the next start time.
	c.advanceTo(tick[0].Add(30 * time.Second))
	envtest.Eventually(t, "the next sync to be planned", func() (bool, error) { return c.clock.HasWaiters(), nil })
	if names := c.jobNames(cj); len(names) != 0 {
		t.Fatalf("jobs %v started after the deadline", names)
	}
	c.advanceTo(tick[1].Add(5 * time.Second))
	envtest.Eventually(t, "the job within the deadline", func() (bool, error) {
		return sameNames(c.jobNames(cj), nameAt(cj, tick[1])), nil
	})
}

func TestTimeZone(t *testing.T) {
	c := startCluster(t)
	cj := newCronJob("tokyo", "0 9 * * *", batchv1.AllowConcurrent)
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	cj = c.create(cj)
	tick := ticks(t, cj, 1)[0]
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if h := tick.In(tokyo).Hour(); h != 9 || tick.UTC().Hour() != 0 {
		t.Fatalf("the start time %v is not 09:00 in Tokyo", tick)
	}
	c.advanceTo(tick.Add(30 * time.Second))
	name := nameAt(cj, tick)
	envtest.Eventually(t, "the job at 09:00 Tokyo time", func() (bool, error) { return sameNames(c.jobNames(cj), name), nil })
	if got, want := c.job(name).Annotations[batchv1.CronJobScheduledTimestampAnnotation], tick.In(tokyo).Format(time.RFC3339); got != want {
		t.Errorf("scheduled timestamp %q, want %q", got, want)
	}
}

// A controller that was down for a long time warns and starts only the
// latest missed start time (upstream's "more than 100 missed" e2e test).
func TestManyMissedStartTimes(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("late", "*/1 * * * ?", batchv1.ForbidConcurrent))
	now := ticks(t, cj, 1)[0].Add(200*time.Minute + 15*time.Second)
	c.advanceTo(now)
	latest := nameAt(cj, now.Truncate(time.Minute))
	envtest.Eventually(t, "the latest start time to run", func() (bool, error) {
		return sameNames(activeNames(c.cronJob("late")), latest), nil
	})
	envtest.Eventually(t, "TooManyMissedTimes", func() (bool, error) {
		return c.hasEvent("late", "Warning TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"), nil
	})
	if names := c.jobNames(cj); !sameNames(names, latest) {
		t.Errorf("jobs %v, want only %s", names, latest)
	}
	c.noEventWith("late", "UnexpectedJob", "MissingJob")
}

// A schedule that parses but never runs is reported, and nothing is planned.
func TestScheduleThatNeverRuns(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("never", "0 0 31 2 *", batchv1.AllowConcurrent))
	envtest.Eventually(t, "InvalidSchedule", func() (bool, error) {
		return c.hasEvent("never", "Warning InvalidSchedule invalid schedule: 0 0 31 2 * : time difference between two schedules is less than 1 second"), nil
	})
	if c.clock.HasWaiters() {
		t.Error("a sync is planned for a schedule that never runs")
	}
	if names := c.jobNames(cj); len(names) != 0 {
		t.Errorf("jobs %v", names)
	}
}

// The job name is the lock: a job created by an earlier sync that could not
// record it (a crash between the two writes) is taken into status, not
// created twice.
func TestJobCreatedBeforeACrashIsRecorded(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("crash", "* * * * *", batchv1.ForbidConcurrent))
	tick := ticks(t, cj, 1)[0]
	earlier, err := newJob(cj, tick)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.BatchV1().Jobs("default").Create(bg, earlier, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.advanceTo(tick.Add(time.Second))
	envtest.Eventually(t, "the job recorded", func() (bool, error) {
		got := c.cronJob("crash")
		return sameNames(activeNames(got), earlier.Name) && got.Status.LastScheduleTime != nil && got.Status.LastScheduleTime.Time.Equal(tick), nil
	})
	if names := c.jobNames(cj); !sameNames(names, earlier.Name) {
		t.Errorf("jobs %v, want only %s", names, earlier.Name)
	}
	c.noEventWith("crash", "SuccessfulCreate", "FailedCreate")
}

// A new schedule takes effect at its next start time: the start times it
// would have had before the change are not run.
func TestScheduleChangeWaitsForTheNewStartTime(t *testing.T) {
	c := startCluster(t)
	cj := c.create(newCronJob("change", "0 0 1 1 *", batchv1.AllowConcurrent))
	envtest.Eventually(t, "the yearly start to be planned", func() (bool, error) { return c.clock.HasWaiters(), nil })
	now := cj.CreationTimestamp.Add(5*time.Minute + 30*time.Second)
	c.clock.SetTime(now)
	got := c.cronJob("change")
	got.Spec.Schedule = "* * * * *"
	if _, err := c.client.BatchV1().CronJobs("default").Update(bg, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the new start time to be planned beside the yearly one", func() (bool, error) { return c.clock.Waiters() == 2, nil })
	next := now.Truncate(time.Minute).Add(time.Minute)
	c.clock.SetTime(next.Add(time.Second))
	envtest.Eventually(t, "the job of the new schedule", func() (bool, error) {
		return sameNames(activeNames(c.cronJob("change")), nameAt(cj, next)), nil
	})
	if names := c.jobNames(cj); !sameNames(names, nameAt(cj, next)) {
		t.Errorf("jobs %v, want only %s", names, nameAt(cj, next))
	}
}
