package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
	"orch/internal/scheduler"
	"orch/internal/simnode"
)

// cluster is an apiserver with a running scheduler and simulated nodes.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	sim    *simnode.Simulator
}

func newCluster(t *testing.T, nodes ...simnode.Node) *cluster {
	env := envtest.New(t, "default", v1.NamespaceNodeLease)
	c := &cluster{t: t, client: env.Client, sim: simnode.New(env.Client, env.Log)}
	for _, n := range nodes {
		c.addNode(context.Background(), n)
	}
	s := scheduler.New(scheduler.Config{Client: env.Client, Informers: env.Informers,
		Recorder: env.Recorder(scheduler.Name), Log: env.Log, Clock: env.Clock})
	c.ctx = env.Start(t, s, c.sim)
	return c
}

func (c *cluster) addNode(ctx context.Context, n simnode.Node) {
	c.t.Helper()
	if err := c.sim.Add(ctx, n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) create(pod *v1.Pod) {
	c.t.Helper()
	pod = pod.DeepCopy()
	pod.UID, pod.Spec.SchedulerName = "", ""
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) get(name string) *v1.Pod {
	c.t.Helper()
	p, err := c.client.CoreV1().Pods("default").Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// nodeOf waits until the pod is bound and returns its node.
func (c *cluster) nodeOf(name string) string {
	c.t.Helper()
	var node string
	envtest.EventuallyTrue(c.t, name+" to be bound", func() bool {
		node = c.get(name).Spec.NodeName
		return node != ""
	})
	return node
}

// unschedulable waits for the pod's PodScheduled=False condition and
// returns its reason and message.
func (c *cluster) unschedulable(name string) (string, string) {
	c.t.Helper()
	var cond v1.PodCondition
	envtest.EventuallyTrue(c.t, name+" to be marked unschedulable", func() bool {
		for _, cd := range c.get(name).Status.Conditions {
			if cd.Type == v1.PodScheduled && cd.Status == v1.ConditionFalse {
				cond = cd
				return true
			}
		}
		return false
	})
	return cond.Reason, cond.Message
}

// event waits for an event about the named pod with the given reason and
// returns its type and message.
func (c *cluster) event(name, reason string) (string, string) {
	c.t.Helper()
	var typ, msg string
	envtest.EventuallyTrue(c.t, fmt.Sprintf("a %s event for %s", reason, name), func() bool {
		list, err := c.client.CoreV1().Events("default").List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				typ, msg = e.Type, e.Message
				return true
			}
		}
		return false
	})
	return typ, msg
}

func (c *cluster) expectMessage(name, want string) {
	c.t.Helper()
	if reason, msg := c.unschedulable(name); reason != v1.PodReasonUnschedulable || msg != want {
		c.t.Errorf("%s: PodScheduled=False %s %q\nwant Unschedulable %q", name, reason, msg, want)
	}
	if typ, msg := c.event(name, "FailedScheduling"); typ != v1.EventTypeWarning || msg != want {
		c.t.Errorf("%s: FailedScheduling event %s %q\nwant Warning %q", name, typ, msg, want)
	}
}
