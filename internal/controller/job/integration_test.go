package job

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// completions 4, parallelism 2: two pods at a time, each with the template,
// the controller reference, the selector labels and the tracking
// finalizer; the finalizer goes once a pod is counted.
func TestNonIndexedCompletionsAndParallelism(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := c.create(newJob("pi", ptr.To[int32](4), 2))
	envtest.EventuallyTrue(t, "2 pods", func() bool { return len(c.pods("pi")) == 2 })
	for _, p := range c.pods("pi") {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != job.UID || ref.Kind != "Job" || ref.APIVersion != "batch/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Fatalf("pod %s: ownerReferences %+v", p.Name, p.OwnerReferences)
		}
		if !strings.HasPrefix(p.Name, "pi-") || !hasJobFinalizer(p) ||
			p.Labels[batchv1.ControllerUidLabel] != string(job.UID) || p.Labels["controller-uid"] != string(job.UID) ||
			p.Labels[batchv1.JobNameLabel] != "pi" || p.Labels["job-name"] != "pi" {
			t.Fatalf("pod %s: name, labels or finalizers wrong: %v %v", p.Name, p.Labels, p.Finalizers)
		}
	}
	envtest.EventuallyTrue(t, "status active 2 and a start time", func() bool {
		st := c.job("pi").Status
		return st.Active == 2 && st.StartTime != nil && st.Ready != nil && *st.Ready == 0 && st.Terminating != nil
	})

	first := c.pods("pi")
	for _, p := range first {
		c.finish(p, corev1.PodSucceeded, 0, time.Now())
	}
	envtest.EventuallyTrue(t, "two counted and two more pods", func() bool {
		return c.job("pi").Status.Succeeded == 2 && len(c.running("pi")) == 2
	})
	for _, p := range c.pods("pi") {
		if p.Status.Phase == corev1.PodSucceeded && hasJobFinalizer(p) {
			t.Fatalf("counted pod %s kept its finalizer", p.Name)
		}
	}
	for _, p := range c.running("pi") {
		c.finish(p, corev1.PodSucceeded, 0, time.Now())
	}
	envtest.EventuallyTrue(t, "complete", func() bool { return condition(c.job("pi"), batchv1.JobComplete) != "" })
	got := c.job("pi")
	st := got.Status
	if st.Succeeded != 4 || st.Failed != 0 || st.Active != 0 || st.CompletionTime == nil ||
		len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) != 0 {
		t.Fatalf("status %+v", st)
	}
	want := "True CompletionsReached Reached expected number of succeeded pods"
	if condition(got, batchv1.JobSuccessCriteriaMet) != want || condition(got, batchv1.JobComplete) != want {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	if st.Conditions[0].Type != batchv1.JobSuccessCriteriaMet || st.Conditions[1].Type != batchv1.JobComplete {
		t.Fatalf("SuccessCriteriaMet must come before Complete: %+v", st.Conditions)
	}
	if n := len(c.pods("pi")); n != 4 {
		t.Fatalf("%d pods, want 4", n)
	}
	for _, p := range c.pods("pi") {
		if hasJobFinalizer(p) {
			t.Fatalf("pod %s kept its finalizer after completion", p.Name)
		}
	}
	envtest.EventuallyTrue(t, "events", func() bool {
		ev := c.events("pi")
		return envtest.CountPrefix(ev, "Normal SuccessfulCreate Created pod: pi-") == 4 && envtest.CountPrefix(ev, "Normal Completed Job completed") == 1
	})
}

// Without completions the job is a work queue: once one pod succeeds no
// more are created, and it completes when the others have finished.
func TestWorkQueue(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.create(newJob("queue", nil, 3))
	envtest.EventuallyTrue(t, "3 pods", func() bool { return len(c.pods("queue")) == 3 })
	pods := c.pods("queue")
	c.finish(pods[0], corev1.PodSucceeded, 0, time.Now())
	envtest.EventuallyTrue(t, "one counted, two active", func() bool {
		st := c.job("queue").Status
		return st.Succeeded == 1 && st.Active == 2
	})
	if n := len(c.pods("queue")); n != 3 {
		t.Fatalf("%d pods after the first success, want 3", n)
	}
	c.finish(pods[1], corev1.PodSucceeded, 0, time.Now())
	c.finish(pods[2], corev1.PodFailed, 1, time.Now())
	envtest.EventuallyTrue(t, "complete", func() bool { return condition(c.job("queue"), batchv1.JobComplete) != "" })
	if st := c.job("queue").Status; st.Succeeded != 2 || st.Failed != 1 || len(c.pods("queue")) != 3 {
		t.Fatalf("status %+v with %d pods", st, len(c.pods("queue")))
	}
}

// An Indexed job runs each index once: pod names, hostnames, the index
// annotation, label and variable; completedIndexes as intervals.
func TestIndexed(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("idx", ptr.To[int32](4), 2)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	c.create(job)
	envtest.EventuallyTrue(t, "2 pods", func() bool { return len(c.pods("idx")) == 2 })
	byIndex := func() map[string]corev1.Pod {
		m := map[string]corev1.Pod{}
		for _, p := range c.pods("idx") {
			m[p.Annotations[batchv1.JobCompletionIndexAnnotation]] = p
		}
		return m
	}
	for ix, p := range byIndex() {
		if ix != "0" && ix != "1" {
			t.Fatalf("index %q, want 0 and 1 first", ix)
		}
		env := p.Spec.Containers[0].Env
		if !strings.HasPrefix(p.Name, "idx-"+ix+"-") || p.Spec.Hostname != "idx-"+ix ||
			p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" ||
			env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Fatalf("pod %s: hostname %q labels %v env %+v", p.Name, p.Spec.Hostname, p.Labels, env)
		}
	}
	c.finish(byIndex()["1"], corev1.PodSucceeded, 0, time.Now())
	envtest.EventuallyTrue(t, "index 1 done and index 2 started", func() bool {
		_, two := byIndex()["2"]
		return c.job("idx").Status.CompletedIndexes == "1" && two
	})
	// A failed index is run again.
	c.finish(byIndex()["0"], corev1.PodFailed, 1, time.Now())
	envtest.EventuallyTrue(t, "index 0 failed once", func() bool { return c.job("idx").Status.Failed == 1 })
	c.finish(byIndex()["2"], corev1.PodSucceeded, 0, time.Now())
	envtest.EventuallyTrue(t, "1,2 done", func() bool { return c.job("idx").Status.CompletedIndexes == "1,2" })
	for _, want := range []string{"0", "3"} {
		envtest.EventuallyTrue(t, "index "+want+" running", func() bool {
			for _, p := range c.running("idx") {
				if p.Annotations[batchv1.JobCompletionIndexAnnotation] == want {
					c.finish(p, corev1.PodSucceeded, 0, time.Now())
					return true
				}
			}
			return false
		})
	}
	envtest.EventuallyTrue(t, "complete", func() bool { return condition(c.job("idx"), batchv1.JobComplete) != "" })
	if st := c.job("idx").Status; st.CompletedIndexes != "0-3" || st.Succeeded != 4 || st.Failed != 1 {
		t.Fatalf("status %+v", st)
	}
}

// Failed pods are replaced after the pod failure backoff, on the injected
// clock; past backoffLimit the job fails.
func TestBackoffLimitExceeded(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	job := newJob("flaky", ptr.To[int32](1), 1)
	job.Spec.BackoffLimit = ptr.To[int32](1)
	c.create(job)
	envtest.EventuallyTrue(t, "a pod", func() bool { return len(c.pods("flaky")) == 1 })
	c.finish(c.pods("flaky")[0], corev1.PodFailed, 1, clk.Now())
	envtest.EventuallyTrue(t, "the failure counted and a re-check planned", func() bool {
		return c.job("flaky").Status.Failed == 1 && clk.HasWaiters()
	})
	if n := len(c.pods("flaky")); n != 1 {
		t.Fatalf("%d pods before the backoff has passed, want 1", n)
	}
	clk.Step(11 * time.Second)
	envtest.EventuallyTrue(t, "a replacement", func() bool { return len(c.running("flaky")) == 1 })
	c.finish(c.running("flaky")[0], corev1.PodFailed, 1, clk.Now())
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("flaky"), batchv1.JobFailed) != "" })
	got := c.job("flaky")
	want := "True BackoffLimitExceeded Job has reached the specified backoff limit"
	if condition(got, batchv1.JobFailureTarget) != want || condition(got, batchv1.JobFailed) != want {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.Failed != 2 || got.Status.Active != 0 || got.Status.CompletionTime != nil || len(c.pods("flaky")) != 2 {
		t.Fatalf("status %+v, %d pods", got.Status, len(c.pods("flaky")))
	}
	envtest.EventuallyTrue(t, "the event", func() bool {
		return envtest.CountPrefix(c.events("flaky"), "Warning BackoffLimitExceeded Job has reached the specified backoff limit") == 1
	})
}

// With restartPolicy OnFailure the containers' restarts count.
func TestBackoffLimitCountsRestarts(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("restarts", ptr.To[int32](1), 1)
	job.Spec.BackoffLimit = ptr.To[int32](2)
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	c.create(job)
	envtest.EventuallyTrue(t, "a pod", func() bool { return len(c.pods("restarts")) == 1 })
	c.setStatus(c.pods("restarts")[0].Name, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("restarts"), batchv1.JobFailed) != "" })
	if got := condition(c.job("restarts"), batchv1.JobFailed); !strings.HasPrefix(got, "True BackoffLimitExceeded") {
		t.Fatalf("Failed condition %q", got)
	}
	envtest.EventuallyTrue(t, "the pod deleted", func() bool { return len(c.pods("restarts")) == 0 })
}

// Past activeDeadlineSeconds (on the injected clock) the running pods are
// deleted and counted as failed, and the job fails.
func TestActiveDeadline(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	job := newJob("slow", ptr.To[int32](2), 2)
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	c.create(job)
	envtest.EventuallyTrue(t, "2 pods and a deadline check", func() bool {
		return len(c.pods("slow")) == 2 && c.job("slow").Status.StartTime != nil && clk.HasWaiters()
	})
	clk.Step(31 * time.Second)
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("slow"), batchv1.JobFailed) != "" })
	got := c.job("slow")
	want := "True DeadlineExceeded Job was active longer than specified deadline"
	if condition(got, batchv1.JobFailureTarget) != want || condition(got, batchv1.JobFailed) != want {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.Failed != 2 || got.Status.Active != 0 || ptr.Deref(got.Status.Terminating, -1) != 0 {
		t.Fatalf("status %+v", got.Status)
	}
	envtest.EventuallyTrue(t, "pods gone", func() bool { return len(c.pods("slow")) == 0 })
	envtest.EventuallyTrue(t, "events", func() bool {
		ev := c.events("slow")
		return envtest.CountPrefix(ev, "Normal SuccessfulDelete Deleted pod: slow-") == 2 &&
			envtest.CountPrefix(ev, "Warning DeadlineExceeded Job was active longer than specified deadline") == 1
	})
}

// A job created suspended creates no pods; resumed it runs (startTime set
// then); suspended again its pods are deleted without counting as failed.
func TestSuspendAndResume(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("later", ptr.To[int32](4), 2)
	job.Spec.Suspend = ptr.To(true)
	c.create(job)
	envtest.EventuallyTrue(t, "suspended", func() bool {
		return condition(c.job("later"), batchv1.JobSuspended) == "True JobSuspended Job suspended"
	})
	if got := c.job("later"); len(c.pods("later")) != 0 || got.Status.StartTime != nil {
		t.Fatalf("suspended job started: %+v, %d pods", got.Status, len(c.pods("later")))
	}
	c.updateJob("later", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) })
	envtest.EventuallyTrue(t, "resumed with 2 pods", func() bool {
		got := c.job("later")
		return condition(got, batchv1.JobSuspended) == "False JobResumed Job resumed" && got.Status.StartTime != nil &&
			got.Status.Active == 2 && len(c.pods("later")) == 2
	})
	c.updateJob("later", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	envtest.EventuallyTrue(t, "suspended again, pods gone", func() bool {
		got := c.job("later")
		return condition(got, batchv1.JobSuspended) == "True JobSuspended Job suspended" && len(c.pods("later")) == 0 && got.Status.Active == 0
	})
	if st := c.job("later").Status; st.Failed != 0 || st.Succeeded != 0 {
		t.Fatalf("suspension counted pods: %+v", st)
	}
	envtest.EventuallyTrue(t, "events", func() bool {
		ev := c.events("later")
		return envtest.CountPrefix(ev, "Normal Suspended Job suspended") >= 1 && envtest.CountPrefix(ev, "Normal Resumed Job resumed") == 1 &&
			envtest.CountPrefix(ev, "Normal SuccessfulDelete Deleted pod: later-") == 2
	})
}

// A job that is deleted (the garbage collector, not running here, would
// delete its pods) leaves no tracking finalizer behind.
func TestFinalizersRemovedWhenJobDeleted(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.create(newJob("gone", ptr.To[int32](3), 3))
	envtest.EventuallyTrue(t, "3 pods", func() bool { return len(c.pods("gone")) == 3 })
	c.finish(c.pods("gone")[0], corev1.PodFailed, 1, time.Now())
	envtest.EventuallyTrue(t, "one counted", func() bool { return c.job("gone").Status.Failed == 1 })
	pods := c.pods("gone")
	if err := c.client.BatchV1().Jobs("default").Delete(bg, "gone", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "no finalizers", func() bool {
		ps := c.pods("gone")
		for _, p := range ps {
			if hasJobFinalizer(p) {
				return false
			}
		}
		return len(ps) == len(pods)
	})
}

// A FailJob rule of the podFailurePolicy fails the job at the first
// matching exit code.
func TestPodFailurePolicyFailJob(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("policy", ptr.To[int32](2), 2)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}}}
	c.create(job)
	envtest.EventuallyTrue(t, "2 pods", func() bool { return len(c.pods("policy")) == 2 })
	victim := c.pods("policy")[0]
	c.finish(victim, corev1.PodFailed, 42, time.Now())
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("policy"), batchv1.JobFailed) != "" })
	want := "True PodFailurePolicy Container main for pod default/" + victim.Name + " failed with exit code 42 matching FailJob rule at index 0"
	if got := condition(c.job("policy"), batchv1.JobFailed); got != want {
		t.Fatalf("Failed condition %q, want %q", got, want)
	}
	envtest.EventuallyTrue(t, "the other pod deleted", func() bool { return len(c.running("policy")) == 0 })
}

// An Ignore rule keeps a failure from counting towards backoffLimit.
func TestPodFailurePolicyIgnore(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	job := newJob("ignore", ptr.To[int32](1), 1)
	job.Spec.BackoffLimit = ptr.To[int32](0)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
	c.create(job)
	envtest.EventuallyTrue(t, "a pod", func() bool { return len(c.pods("ignore")) == 1 })
	first := c.pods("ignore")[0]
	c.setStatus(first.Name, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		st.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
	})
	// Ignored or not, a failure delays the replacement.
	stepUntil(t, clk, "a replacement", func() bool { return len(c.running("ignore")) == 1 })
	c.finish(c.running("ignore")[0], corev1.PodSucceeded, 0, clk.Now())
	envtest.EventuallyTrue(t, "complete", func() bool { return condition(c.job("ignore"), batchv1.JobComplete) != "" })
	if st := c.job("ignore").Status; st.Failed != 0 || st.Succeeded != 1 {
		t.Fatalf("status %+v", st)
	}
}

// podReplacementPolicy Failed waits until a terminating pod has failed;
// the default replaces it at once. Both report it in status.terminating.
func TestPodReplacementPolicy(t *testing.T) {
	for _, policy := range []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed} {
		t.Run(string(policy), func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			c := startCluster(t, clk)
			job := newJob("replace", ptr.To[int32](1), 1)
			job.Spec.PodReplacementPolicy = ptr.To(policy)
			job.Spec.Template.Spec.NodeName = "node-1" // deleted gracefully
			c.create(job)
			envtest.EventuallyTrue(t, "a pod", func() bool { return len(c.pods("replace")) == 1 })
			victim := c.pods("replace")[0]
			if err := c.client.CoreV1().Pods("default").Delete(bg, victim.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			envtest.EventuallyTrue(t, "one terminating", func() bool { return ptr.Deref(c.job("replace").Status.Terminating, 0) == 1 })
			if policy == batchv1.TerminatingOrFailed {
				// The terminating pod counts as failed: its replacement
				// waits for the failure backoff.
				stepUntil(t, clk, "a replacement", func() bool { return len(c.running("replace")) == 1 })
				return
			}
			// Nothing to wait for: the terminating pod is not a failure
			// yet, and no replacement is due while it terminates.
			if n := len(c.running("replace")); n != 0 || clk.HasWaiters() {
				t.Fatalf("%d replacements while the pod terminates (a re-check pending: %v), want none", n, clk.HasWaiters())
			}
			c.finish(victim, corev1.PodFailed, 137, clk.Now())
			stepUntil(t, clk, "a replacement after the failure", func() bool { return len(c.running("replace")) == 1 })
			if st := c.job("replace").Status; st.Failed != 1 {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// With backoffLimitPerIndex each index has its own failure budget: a
// failed index is retried (after its backoff) by a pod that carries the
// index's failure count, a failed index does not stop the others, and the
// job fails at the end.
func TestBackoffLimitPerIndex(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	job := newJob("perindex", ptr.To[int32](2), 2)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	c.create(job)
	envtest.EventuallyTrue(t, "2 pods", func() bool { return len(c.pods("perindex")) == 2 })
	for _, p := range c.pods("perindex") {
		if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
			t.Fatalf("pod %s: annotations %v", p.Name, p.Annotations)
		}
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			c.finish(p, corev1.PodFailed, 1, clk.Now())
		} else {
			c.finish(p, corev1.PodSucceeded, 0, clk.Now())
		}
	}
	stepUntil(t, clk, "index 0 retried", func() bool { return len(c.running("perindex")) == 1 })
	retry := c.running("perindex")[0]
	if retry.Annotations[batchv1.JobCompletionIndexAnnotation] != "0" || retry.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Fatalf("retry %s: annotations %v", retry.Name, retry.Annotations)
	}
	c.finish(retry, corev1.PodFailed, 1, clk.Now())
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("perindex"), batchv1.JobFailed) != "" })
	got := c.job("perindex")
	if condition(got, batchv1.JobFailed) != "True FailedIndexes Job has failed indexes" ||
		ptr.Deref(got.Status.FailedIndexes, "") != "0" || got.Status.CompletedIndexes != "1" ||
		got.Status.Failed != 2 || got.Status.Succeeded != 1 {
		t.Fatalf("status %+v", got.Status)
	}
	if n := len(c.pods("perindex")); n != 3 {
		t.Fatalf("%d pods, want 3 (index 0 tried twice)", n)
	}
}

// An orphan the selector matches is adopted with the tracking finalizer
// and counts towards the completions.
func TestAdoptsOrphans(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("adopt", ptr.To[int32](2), 2)
	job.Spec.ManualSelector = ptr.To(true)
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "adopt"}}
	job.Spec.Template.Labels = map[string]string{"app": "adopt", batchv1.JobNameLabel: "adopt"}
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default", Labels: job.Spec.Template.Labels},
		Spec:       job.Spec.Template.Spec,
	}
	if _, err := c.client.CoreV1().Pods("default").Create(bg, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := c.create(job)
	envtest.EventuallyTrue(t, "adopted, and one pod created", func() bool {
		ps := c.pods("adopt")
		mine := 0
		for _, p := range ps {
			if metav1.IsControlledBy(&p, created) && hasJobFinalizer(p) {
				mine++
			}
		}
		return len(ps) == 2 && mine == 2
	})
}

// A successPolicy ends an Indexed job early: the other pods are deleted and
// the job completes with the policy's reason.
func TestSuccessPolicy(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("leader", ptr.To[int32](3), 3)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	c.create(job)
	envtest.EventuallyTrue(t, "3 pods", func() bool { return len(c.pods("leader")) == 3 })
	for _, p := range c.pods("leader") {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			c.finish(p, corev1.PodSucceeded, 0, time.Now())
		}
	}
	envtest.EventuallyTrue(t, "complete", func() bool { return condition(c.job("leader"), batchv1.JobComplete) != "" })
	got := c.job("leader")
	want := "True SuccessPolicy Matched rules at index 0"
	if condition(got, batchv1.JobSuccessCriteriaMet) != want || condition(got, batchv1.JobComplete) != want ||
		got.Status.CompletedIndexes != "0" || got.Status.Succeeded != 1 || got.Status.Active != 0 {
		t.Fatalf("status %+v", got.Status)
	}
	envtest.EventuallyTrue(t, "the other pods deleted", func() bool { return len(c.pods("leader")) == 1 })
}

// A FailIndex rule fails the index at once; past maxFailedIndexes the job
// fails.
func TestMaxFailedIndexes(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := newJob("indexes", ptr.To[int32](3), 3)
	job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](5)
	job.Spec.MaxFailedIndexes = ptr.To[int32](0)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailIndex,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
	}}}
	c.create(job)
	envtest.EventuallyTrue(t, "3 pods", func() bool { return len(c.pods("indexes")) == 3 })
	for _, p := range c.pods("indexes") {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "1" {
			c.finish(p, corev1.PodFailed, 3, time.Now())
		}
	}
	envtest.EventuallyTrue(t, "failed", func() bool { return condition(c.job("indexes"), batchv1.JobFailed) != "" })
	got := c.job("indexes")
	want := "True MaxFailedIndexesExceeded Job has exceeded the specified maximal number of failed indexes"
	if condition(got, batchv1.JobFailed) != want || ptr.Deref(got.Status.FailedIndexes, "") != "1" || got.Status.Failed != 3 {
		t.Fatalf("status %+v", got.Status)
	}
	// The failed pod stays (the pod garbage collector would remove it).
	envtest.EventuallyTrue(t, "the other pods deleted", func() bool { return len(c.pods("indexes")) == 1 })
}

// As the conformance test does: a pod whose owner reference is removed is
// adopted again; a pod whose labels no longer match is released (its
// finalizer removed too) and replaced.
func TestReadoptsAndReleases(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	job := c.create(newJob("claim", ptr.To[int32](4), 2))
	envtest.EventuallyTrue(t, "2 pods", func() bool { return len(c.pods("claim")) == 2 })
	name := c.pods("claim")[0].Name
	pods := c.client.CoreV1().Pods("default")
	update := func(change func(*corev1.Pod)) {
		t.Helper()
		envtest.Update(t, name, pods.Get, pods.Update, change)
	}
	get := func() *corev1.Pod {
		pod, err := c.client.CoreV1().Pods("default").Get(bg, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	update(func(p *corev1.Pod) { p.OwnerReferences = nil })
	envtest.EventuallyTrue(t, "readopted", func() bool {
		p := get()
		return metav1.IsControlledBy(p, job) && hasJobFinalizer(*p)
	})
	update(func(p *corev1.Pod) { p.Labels = nil })
	envtest.EventuallyTrue(t, "released and replaced", func() bool {
		p := get()
		return metav1.GetControllerOf(p) == nil && !hasJobFinalizer(*p) && len(c.running("claim")) == 2
	})
}
