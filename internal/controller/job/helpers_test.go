package job

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

var bg = context.Background()

// cluster is a real apiserver on embedded etcd with the controller running
// against it; the test plays the kubelet.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
}

func startCluster(t *testing.T, clk clock.WithTicker) *cluster {
	t.Helper()
	env := controllertest.New(t, "default")
	env.Context.Clock = clk
	env.Start(t, New(env.Context))
	return &cluster{t: t, client: env.Context.Client}
}

// newJob is a job whose pods never run by themselves.
func newJob(name string, completions *int32, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			Completions: completions,
			Parallelism: &parallelism,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		},
	}
}

func (c *cluster) create(job *batchv1.Job) *batchv1.Job {
	c.t.Helper()
	return envtest.Create(c.t, c.client.BatchV1().Jobs("default").Create, job)
}

func (c *cluster) job(name string) *batchv1.Job {
	c.t.Helper()
	return envtest.Get(c.t, c.client.BatchV1().Jobs("default").Get, name)
}

// pods returns the job's pods, sorted by name.
func (c *cluster) pods(job string) []corev1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods("default").List(bg, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		c.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// running returns the job's pods that are neither finished nor deleted.
func (c *cluster) running(job string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range c.pods(job) {
		if isActive(&p) {
			out = append(out, p)
		}
	}
	return out
}

// finish plays the kubelet: the pod ends with phase and the exit code of
// its container, at the time at.
func (c *cluster) finish(pod corev1.Pod, phase corev1.PodPhase, exitCode int32, at time.Time) {
	c.t.Helper()
	c.setStatus(pod.Name, func(st *corev1.PodStatus) {
		st.Phase = phase
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, FinishedAt: metav1.NewTime(at)},
		}}}
	})
}

func (c *cluster) setStatus(name string, change func(*corev1.PodStatus)) {
	c.t.Helper()
	pods := c.client.CoreV1().Pods("default")
	envtest.Update(c.t, name, pods.Get, pods.UpdateStatus, func(pod *corev1.Pod) { change(&pod.Status) })
}

func (c *cluster) updateJob(name string, change func(*batchv1.Job)) {
	c.t.Helper()
	jobs := c.client.BatchV1().Jobs("default")
	envtest.Update(c.t, name, jobs.Get, jobs.Update, change)
}

// events returns "Type Reason Message" of the events about the job.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, "default", "Job", name)
}

// condition returns "Status Reason Message" of the job's condition t, or "".
func condition(job *batchv1.Job, t batchv1.JobConditionType) string {
	c := findCondition(job, t)
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
}

// stepUntil moves the fake clock 5s at a time, whenever the controller
// waits on it, until cond holds.
func stepUntil(t *testing.T, clk *testingclock.FakeClock, what string, cond func() bool) {
	t.Helper()
	envtest.EventuallyTrue(t, what, func() bool {
		if cond() {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(5 * time.Second)
		}
		return false
	})
}

func hasJobFinalizer(p corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}
