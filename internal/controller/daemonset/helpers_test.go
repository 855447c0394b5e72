package daemonset

import (
	"context"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
	"orch/internal/scheduler"
	"orch/internal/simnode"
)

var bg = context.Background()

// cluster is a real apiserver on embedded etcd running the DaemonSet
// controller, the default scheduler and simulated nodes (whose pods
// become Running and Ready).
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	config *rest.Config
	sim    *simnode.Simulator
}

func startCluster(t *testing.T, clk clock.WithTicker, nodes ...simnode.Node) *cluster {
	t.Helper()
	env := controllertest.New(t, "default", corev1.NamespaceNodeLease)
	env.Context.Clock = clk
	c := &cluster{t: t, client: env.Context.Client, config: env.Server.Config, sim: simnode.New(env.Context.Client, env.Context.Log)}
	for _, n := range nodes {
		c.addNode(n)
	}
	sched := scheduler.New(scheduler.Config{Client: env.Client, Informers: env.Informers,
		Recorder: env.Recorder(scheduler.Name), Log: env.Log, Clock: clk})
	env.Start(t, New(env.Context), sched, c.sim)
	return c
}

func (c *cluster) addNode(n simnode.Node) {
	c.t.Helper()
	if err := c.sim.Add(bg, n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) ds(name string) *appsv1.DaemonSet {
	c.t.Helper()
	return envtest.Get(c.t, c.client.AppsV1().DaemonSets("default").Get, name)
}

// pods returns the live (not terminating) pods labelled app=app.
func (c *cluster) pods(app string) []corev1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods("default").List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// nodesOf returns the sorted nodes the pods are bound to and whether every
// pod is bound and ready.
func nodesOf(pods []corev1.Pod) ([]string, bool) {
	var nodes []string
	allReady := true
	for i := range pods {
		nodes = append(nodes, pods[i].Spec.NodeName)
		if pods[i].Spec.NodeName == "" || !controller.PodReady(&pods[i]) {
			allReady = false
		}
	}
	sort.Strings(nodes)
	return nodes, allReady
}

// runsOn holds when app has exactly one ready pod on each of nodes and
// none elsewhere.
func (c *cluster) runsOn(app string, nodes ...string) bool {
	got, ready := nodesOf(c.pods(app))
	sort.Strings(nodes)
	return ready && strings.Join(got, ",") == strings.Join(nodes, ",")
}

func (c *cluster) updateNode(name string, mutate func(*corev1.Node)) {
	c.t.Helper()
	nodes := c.client.CoreV1().Nodes()
	envtest.Update(c.t, name, nodes.Get, nodes.Update, mutate)
}

func (c *cluster) updateDS(name string, mutate func(*appsv1.DaemonSet)) {
	c.t.Helper()
	dss := c.client.AppsV1().DaemonSets("default")
	envtest.Update(c.t, name, dss.Get, dss.Update, mutate)
}

// events returns "Type Reason Message" of the events about DaemonSet name.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, "default", "DaemonSet", name)
}

func (c *cluster) revisions(ds *appsv1.DaemonSet) []appsv1.ControllerRevision {
	c.t.Helper()
	list, err := c.client.AppsV1().ControllerRevisions("default").List(bg, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == ds.UID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

func newDS(name string, mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
	if mutate != nil {
		mutate(ds)
	}
	return ds
}

func (c *cluster) createDS(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	c.t.Helper()
	return envtest.Create(c.t, c.client.AppsV1().DaemonSets("default").Create, ds)
}

// statusIs reports whether ds's status has the numbers and has observed
// its generation.
func statusIs(ds *appsv1.DaemonSet, desired, current, misscheduled, ready, updated, available int32) bool {
	s := ds.Status
	return s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == desired && s.CurrentNumberScheduled == current &&
		s.NumberMisscheduled == misscheduled && s.NumberReady == ready && s.UpdatedNumberScheduled == updated &&
		s.NumberAvailable == available && s.NumberUnavailable == desired-available
}
