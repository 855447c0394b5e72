package replicaset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

// cluster is a real apiserver on embedded etcd with the controller running
// against it.
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

var bg = context.Background()

// pods returns the pods of the default namespace with label app=app.
func (c *cluster) pods(app string) []corev1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods("default").List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	return list.Items
}

func (c *cluster) rs(name string) *appsv1.ReplicaSet {
	c.t.Helper()
	rs, err := c.client.AppsV1().ReplicaSets("default").Get(bg, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return rs
}

// kubeletReady plays the kubelet: the pod is running and ready since since.
func (c *cluster) kubeletReady(pod corev1.Pod, since time.Time) {
	c.t.Helper()
	pod.Status = readyStatus(since)
	if _, err := c.client.CoreV1().Pods("default").UpdateStatus(bg, &pod, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// events returns "Type Reason Message" of the events about the object.
func (c *cluster) events(kind, name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, "default", kind, name)
}

func TestReplicaSetScalesAndReportsStatus(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	rs, err := c.client.AppsV1().ReplicaSets("default").Create(bg, newRS("web", 3, map[string]string{"app": "web"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "3 pods and status.replicas 3", func() (bool, error) {
		got := c.rs("web")
		return len(c.pods("web")) == 3 && got.Status.Replicas == 3 && got.Status.ObservedGeneration == got.Generation, nil
	})
	for _, p := range c.pods("web") {
		ref := metav1.GetControllerOf(&p)
		if !strings.HasPrefix(p.Name, "web-") || ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" ||
			ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s: ownerReferences %+v", p.Name, p.OwnerReferences)
		}
	}

	// The kubelet reports two pods ready.
	pods := c.pods("web")
	c.kubeletReady(pods[0], time.Now())
	c.kubeletReady(pods[1], time.Now())
	envtest.Eventually(t, "2 ready and available", func() (bool, error) {
		st := c.rs("web").Status
		return st.ReadyReplicas == 2 && st.AvailableReplicas == 2 && st.FullyLabeledReplicas == 3, nil
	})

	// Scale down through the scale subresource: the pod that is not ready
	// goes first.
	if _, err := c.client.AppsV1().ReplicaSets("default").UpdateScale(bg, "web",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
		metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "2 pods", func() (bool, error) {
		got := c.rs("web")
		return len(c.pods("web")) == 2 && got.Status.Replicas == 2 && got.Status.ObservedGeneration == got.Generation, nil
	})
	for _, p := range c.pods("web") {
		if p.Name == pods[2].Name {
			t.Fatalf("the ready pods were kept over the unready %s: %v", pods[2].Name, p.Name)
		}
	}

	// A pod that dies is replaced.
	if err := c.client.CoreV1().Pods("default").Delete(bg, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "a replacement", func() (bool, error) {
		ps := c.pods("web")
		return len(ps) == 2 && ps[0].Name != pods[0].Name && ps[1].Name != pods[0].Name, nil
	})
	envtest.Eventually(t, "events", func() (bool, error) {
		ev := c.events("ReplicaSet", "web")
		return envtest.CountPrefix(ev, "Normal SuccessfulCreate Created pod: web-") == 4 &&
			envtest.CountPrefix(ev, "Normal SuccessfulDelete Deleted pod: "+pods[2].Name) == 1, nil
	})
}

// The informer lags behind the creates; expectations keep the controller
// from creating the same replicas twice.
func TestReplicaSetNeverOvershoots(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(bg, newRS("big", 40, map[string]string{"app": "big"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	most := 0
	envtest.Eventually(t, "40 pods", func() (bool, error) {
		n := len(c.pods("big"))
		most = max(most, n)
		return c.rs("big").Status.Replicas == 40, nil
	})
	if n := len(c.pods("big")); n != 40 || most > 40 {
		t.Fatalf("%d pods (at most %d seen), want exactly 40", n, most)
	}
}

func TestReplicaSetAdoptsAndReleases(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	web := map[string]string{"app": "web"}
	// An orphan that matches, and a matching pod that another controller owns.
	if _, err := c.client.CoreV1().Pods("default").Create(bg, newPod("orphan", web), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owned := newPod("owned-elsewhere", web)
	yes := true
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "x", UID: "0000-other", Controller: &yes}}
	if _, err := c.client.CoreV1().Pods("default").Create(bg, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs, err := c.client.AppsV1().ReplicaSets("default").Create(bg, newRS("web", 2, web), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the orphan adopted and one pod created", func() (bool, error) {
		mine := 0
		for _, p := range c.pods("web") {
			if controlledBy(&p, rs) {
				mine++
			}
		}
		return mine == 2 && c.rs("web").Status.Replicas == 2, nil
	})
	orphan, _ := c.client.CoreV1().Pods("default").Get(bg, "orphan", metav1.GetOptions{})
	if !controlledBy(orphan, rs) || !*metav1.GetControllerOf(orphan).BlockOwnerDeletion {
		t.Fatalf("orphan not adopted: %+v", orphan.OwnerReferences)
	}
	other, _ := c.client.CoreV1().Pods("default").Get(bg, "owned-elsewhere", metav1.GetOptions{})
	if controlledBy(other, rs) {
		t.Fatal("adopted a pod another controller owns")
	}
	if got := len(c.pods("web")); got != 3 {
		t.Fatalf("%d pods with app=web, want 3 (2 ours + 1 someone else's)", got)
	}

	// Relabel the adopted pod out of the selector: it is released and
	// replaced.
	orphan.Labels = map[string]string{"app": "gone"}
	if _, err := c.client.CoreV1().Pods("default").Update(bg, orphan, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "released and replaced", func() (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(bg, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mine := 0
		for _, q := range c.pods("web") {
			if controlledBy(&q, rs) {
				mine++
			}
		}
		return len(p.OwnerReferences) == 0 && mine == 2, nil
	})
}

func controlledBy(p *corev1.Pod, owner metav1.Object) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.UID == owner.GetUID()
}

func TestReplicationController(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	two := int32(2)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &two,
			Selector: map[string]string{"app": "old"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "old"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	rc, err := c.client.CoreV1().ReplicationControllers("default").Create(bg, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	get := func() *corev1.ReplicationController {
		got, err := c.client.CoreV1().ReplicationControllers("default").Get(bg, "old", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	envtest.Eventually(t, "2 pods", func() (bool, error) {
		return len(c.pods("old")) == 2 && get().Status.Replicas == 2, nil
	})
	for _, p := range c.pods("old") {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID || !strings.HasPrefix(p.Name, "old-") {
			t.Fatalf("pod %s: %+v", p.Name, p.OwnerReferences)
		}
		c.kubeletReady(p, time.Now())
	}
	envtest.Eventually(t, "ready", func() (bool, error) {
		st := get().Status
		return st.ReadyReplicas == 2 && st.AvailableReplicas == 2 && st.FullyLabeledReplicas == 2 && st.ObservedGeneration == 1, nil
	})
	cur := get()
	zero := int32(0)
	cur.Spec.Replicas = &zero
	if _, err := c.client.CoreV1().ReplicationControllers("default").Update(bg, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "scaled to 0", func() (bool, error) {
		st := get().Status
		return len(c.pods("old")) == 0 && st.Replicas == 0 && st.ObservedGeneration == 2, nil
	})
	envtest.Eventually(t, "events", func() (bool, error) {
		ev := c.events("ReplicationController", "old")
		return envtest.CountPrefix(ev, "Normal SuccessfulCreate") == 2 && envtest.CountPrefix(ev, "Normal SuccessfulDelete") == 2, nil
	})
}

// availableReplicas counts pods ready for minReadySeconds on the injected
// clock; the controller re-checks when that time comes.
func TestMinReadySecondsFollowsTheClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	rs := newRS("slow", 2, map[string]string{"app": "slow"})
	rs.Spec.MinReadySeconds = 30
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(bg, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "2 pods", func() (bool, error) { return len(c.pods("slow")) == 2, nil })
	for _, p := range c.pods("slow") {
		c.kubeletReady(p, clk.Now())
	}
	envtest.Eventually(t, "ready but not available", func() (bool, error) {
		st := c.rs("slow").Status
		return st.ReadyReplicas == 2, nil
	})
	if st := c.rs("slow").Status; st.AvailableReplicas != 0 {
		t.Fatalf("available before minReadySeconds: %+v", st)
	}
	// The controller waits on the clock for the pods' 30 s.
	envtest.Eventually(t, "a pending re-check", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(31 * time.Second)
	envtest.Eventually(t, "available", func() (bool, error) { return c.rs("slow").Status.AvailableReplicas == 2, nil })
}

// Pods on a node are deleted gracefully: until the kubelet finishes them
// they count in status.terminatingReplicas, and a replacement is created
// at once.
func TestTerminatingReplicas(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	rs := newRS("web", 2, map[string]string{"app": "web"})
	rs.Spec.Template.Spec.NodeName = "node-1"
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(bg, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "2 pods", func() (bool, error) { return c.rs("web").Status.Replicas == 2, nil })
	victim := c.pods("web")[0]
	if err := c.client.CoreV1().Pods("default").Delete(bg, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "a replacement and one terminating", func() (bool, error) {
		st := c.rs("web").Status
		return len(c.pods("web")) == 3 && st.Replicas == 2 && st.TerminatingReplicas != nil && *st.TerminatingReplicas == 1, nil
	})
	zero := int64(0)
	if err := c.client.CoreV1().Pods("default").Delete(bg, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "none terminating", func() (bool, error) {
		st := c.rs("web").Status
		return len(c.pods("web")) == 2 && st.TerminatingReplicas != nil && *st.TerminatingReplicas == 0, nil
	})
}
