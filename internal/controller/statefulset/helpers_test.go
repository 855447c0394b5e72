package statefulset

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/garbagecollector"
	"orch/internal/controller/pvcprotection"
	"orch/internal/envtest"
)

var bg = context.Background()

const ns = "default"

// cluster is a real apiserver on embedded etcd with the StatefulSet
// controller (and, when asked, the garbage collector) running against it.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
}

func startCluster(t *testing.T, withGC bool) *cluster {
	t.Helper()
	return startClusterWithClock(t, withGC, clock.RealClock{})
}

func startClusterWithClock(t *testing.T, withGC bool, clk clock.WithTicker) *cluster {
	t.Helper()
	env := controllertest.New(t, ns)
	env.Context.Clock = clk
	// The claims carry the protection finalizer (admission); its
	// controller lets a claim go once its pod has.
	components := []interface{ Start(context.Context) error }{New(env.Context), pvcprotection.New(env.Context)}
	if withGC {
		components = append(components, garbagecollector.New(env.Context))
	}
	env.Start(t, components...)
	return &cluster{t: t, client: env.Context.Client}
}

func newSet(name string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name + "-svc",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
}

func (c *cluster) create(set *appsv1.StatefulSet) *appsv1.StatefulSet {
	c.t.Helper()
	created, err := c.client.AppsV1().StatefulSets(ns).Create(bg, set, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return created
}

func (c *cluster) set(name string) *appsv1.StatefulSet {
	c.t.Helper()
	set, err := c.client.AppsV1().StatefulSets(ns).Get(bg, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return set
}

// change applies mutate to the set, retrying conflicts.
func (c *cluster) change(name string, mutate func(*appsv1.StatefulSet)) {
	c.t.Helper()
	for i := 0; ; i++ {
		set := c.set(name)
		mutate(set)
		_, err := c.client.AppsV1().StatefulSets(ns).Update(bg, set, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if i > 10 {
			c.t.Fatal(err)
		}
	}
}

// pods returns the pods with app=app by name.
func (c *cluster) pods(app string) map[string]corev1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

func names(pods map[string]corev1.Pod) string {
	var n []string
	for k := range pods {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

// markReady plays the kubelet: the pod runs and is ready.
func (c *cluster) markReady(name string) {
	c.t.Helper()
	c.setPhase(name, corev1.PodRunning, true)
}

func (c *cluster) setPhase(name string, phase corev1.PodPhase, ready bool) {
	c.t.Helper()
	if err := c.trySetPhase(name, phase, ready); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) trySetPhase(name string, phase corev1.PodPhase, ready bool) error {
	return c.trySetPhaseSince(name, phase, ready, time.Now())
}

// trySetPhaseSince sets the pod's phase and its Ready condition, changed at
// since.
func (c *cluster) trySetPhaseSince(name string, phase corev1.PodPhase, ready bool, since time.Time) error {
	pod, err := c.client.CoreV1().Pods(ns).Get(bg, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = phase
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)}}
	_, err = c.client.CoreV1().Pods(ns).UpdateStatus(bg, pod, metav1.UpdateOptions{})
	return err
}

// kubelet marks every pending pod with label app=app Running and Ready
// until the test ends.
func (c *cluster) kubelet(app string) {
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	wg.Add(1)
	c.t.Cleanup(func() { cancel(); wg.Wait() })
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err == nil {
				for _, p := range list.Items {
					if p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil {
						_ = c.trySetPhase(p.Name, corev1.PodRunning, true)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

// events returns "Type Reason Message" of the events about set name.
func (c *cluster) events(name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, ns, "StatefulSet", name)
}

func (c *cluster) revisions(set *appsv1.StatefulSet) []appsv1.ControllerRevision {
	c.t.Helper()
	list, err := c.client.AppsV1().ControllerRevisions(ns).List(bg, metav1.ListOptions{LabelSelector: "app=" + set.Name})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []appsv1.ControllerRevision
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == set.UID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

func int32p(n int32) *int32 { return &n }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
