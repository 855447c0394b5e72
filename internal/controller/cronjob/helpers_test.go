package cronjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

var bg = context.Background()

// cluster is a real apiserver on embedded etcd with the controller running
// against it on a fake clock. No job controller runs: tests finish jobs by
// writing their status.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	clock  *testingclock.FakeClock
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	env := controllertest.New(t, "default")
	clk := testingclock.NewFakeClock(time.Now())
	env.Context.Clock = clk
	env.Start(t, New(env.Context))
	return &cluster{t: t, client: env.Context.Client, clock: clk}
}

// newCronJob is a cron job of the default namespace running busybox.
func newCronJob(name, schedule string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:          schedule,
			ConcurrencyPolicy: policy,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "300"}}},
			}}}},
		},
	}
}

func (c *cluster) create(cj *batchv1.CronJob) *batchv1.CronJob {
	c.t.Helper()
	return envtest.Create(c.t, c.client.BatchV1().CronJobs("default").Create, cj)
}

func (c *cluster) cronJob(name string) *batchv1.CronJob {
	c.t.Helper()
	return envtest.Get(c.t, c.client.BatchV1().CronJobs("default").Get, name)
}

// jobNames returns the names of the jobs the cron job controls.
func (c *cluster) jobNames(cj *batchv1.CronJob) []string {
	var names []string
	for _, j := range c.jobs(cj) {
		names = append(names, j.Name)
	}
	return names
}

func (c *cluster) jobs(cj *batchv1.CronJob) []batchv1.Job {
	c.t.Helper()
	list, err := c.client.BatchV1().Jobs("default").List(bg, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, cj) {
			out = append(out, j)
		}
	}
	return out
}

func (c *cluster) job(name string) *batchv1.Job {
	c.t.Helper()
	job, err := c.client.BatchV1().Jobs("default").Get(bg, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return job
}

// finish plays the job controller: the job started at start and succeeded
// (or failed) at end, with the conditions and counters upstream requires.
func (c *cluster) finish(name string, succeeded bool, start, end time.Time) {
	c.t.Helper()
	job := c.job(name)
	now := metav1.NewTime(end)
	job.Status.StartTime = &metav1.Time{Time: start}
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now, LastProbeTime: now},
		}
	}
	if _, err := c.client.BatchV1().Jobs("default").UpdateStatus(bg, job, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// events returns "Type Reason Message" of the events about the cron job.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, "default", "CronJob", name)
}

func (c *cluster) hasEvent(name, line string) bool {
	for _, e := range c.events(name) {
		if e == line {
			return true
		}
	}
	return false
}

// noEventWith fails the test if an event about the cron job has one of
// the reasons.
func (c *cluster) noEventWith(name string, reasons ...string) {
	c.t.Helper()
	for _, e := range c.events(name) {
		for _, r := range reasons {
			if strings.Contains(e, " "+r+" ") {
				c.t.Errorf("unexpected event %q", e)
			}
		}
	}
}

// advanceTo moves the fake clock to t once the controller has planned its
// next sync (a timer is waiting), so that the plan is made before the move.
func (c *cluster) advanceTo(t time.Time) {
	c.t.Helper()
	envtest.Eventually(c.t, "the controller to plan its next sync", func() (bool, error) { return c.clock.HasWaiters(), nil })
	c.clock.SetTime(t)
}

// ticks returns the first n start times of the cron job's schedule after
// its creation.
func ticks(t *testing.T, cj *batchv1.CronJob, n int) []time.Time {
	t.Helper()
	sched, err := cron.ParseStandard(scheduleInZone(cj))
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for at := cj.CreationTimestamp.Time; len(out) < n; {
		at = sched.Next(at)
		out = append(out, at)
	}
	return out
}

func nameAt(cj *batchv1.CronJob, t time.Time) string {
	return jobName(cj, t)
}

// activeNames returns the names in status.active.
func activeNames(cj *batchv1.CronJob) []string {
	var out []string
	for _, ref := range cj.Status.Active {
		out = append(out, ref.Name)
	}
	return out
}

func sameNames(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, w := range want {
		if !seen[w] {
			return false
		}
	}
	return true
}
