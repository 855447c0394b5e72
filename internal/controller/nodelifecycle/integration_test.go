package nodelifecycle_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/nodelifecycle"
	"orch/internal/envtest"
	"orch/internal/simnode"
)

// startLifecycle runs the controller, with the grace period shortened to
// 2 s, and nodes simulated with a Lease renewed every 200 ms (until
// StopHeartbeat), until the test ends.
func startLifecycle(t *testing.T, nodes ...simnode.Node) (kubernetes.Interface, *simnode.Simulator) {
	t.Helper()
	env := controllertest.New(t, "app", corev1.NamespaceNodeLease)
	c, err := nodelifecycle.New(env.Context)
	if err != nil {
		t.Fatal(err)
	}
	c.Grace, c.Monitor = 2*time.Second, 200*time.Millisecond
	sim := simnode.New(env.Context.Client, env.Context.Log)
	sim.LeaseInterval = 200 * time.Millisecond
	for _, n := range nodes {
		if err := sim.Add(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	env.Start(t, c, sim)
	return env.Context.Client, sim
}

// TestSilentNodeIsTaintedAndItsPodsEvicted is acceptance item 5 with the
// grace period shortened to 2 s: a node whose heartbeats stop becomes
// Unknown, gets the unreachable taints, and its pods are deleted once their
// toleration (1 s here, 300 s by default) runs out; a pod that tolerates the
// taint forever stays.
func TestSilentNodeIsTaintedAndItsPodsEvicted(t *testing.T) {
	client, sim := startLifecycle(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	ctx := t.Context()
	pod := func(name string, seconds *int64) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: "n1",
			Containers:  []corev1.Container{{Name: "c", Image: "i"}},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}}}
		if _, err := client.CoreV1().Pods("app").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("short", ptr.To[int64](1))
	pod("forever", nil)
	envtest.EventuallyTrue(t, "pods running", func() bool {
		p, err := client.CoreV1().Pods("app").Get(ctx, "short", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})

	sim.StopHeartbeat("n1")
	envtest.EventuallyTrue(t, "n1 Ready=Unknown with the unreachable NoExecute taint", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		unknown, tainted := false, false
		for _, cond := range n.Status.Conditions {
			unknown = unknown || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionUnknown)
		}
		for _, taint := range n.Spec.Taints {
			tainted = tainted || (taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute)
		}
		return unknown && tainted
	})
	envtest.EventuallyTrue(t, "the short-toleration pod to be evicted", func() bool {
		p, err := client.CoreV1().Pods("app").Get(ctx, "short", metav1.GetOptions{})
		return err != nil || p.DeletionTimestamp != nil
	})
	if p, err := client.CoreV1().Pods("app").Get(ctx, "forever", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod that tolerates the taint forever was evicted: %v %v", p, err)
	}
	if n, _ := client.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{}); len(n.Spec.Taints) != 0 {
		t.Errorf("the healthy node got taints: %v", n.Spec.Taints)
	}

	sim.ResumeHeartbeat("n1")
	envtest.EventuallyTrue(t, "n1's taints to go once it heartbeats again", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && len(n.Spec.Taints) == 0
	})
}

// TestSilentAutonomousNodeKeepsItsPods: an autonomous node (label
// orch.dev/autonomous=true) that goes silent is Unknown and tainted
// unreachable NoSchedule, but not NoExecute: its pod stays, while the same
// pod on an ordinary silent node is evicted.
func TestSilentAutonomousNodeKeepsItsPods(t *testing.T) {
	client, sim := startLifecycle(t, simnode.Node{Name: "edge", Labels: map[string]string{nodelifecycle.AutonomousLabel: "true"}},
		simnode.Node{Name: "plain"}, simnode.Node{Name: "healthy"})
	ctx := t.Context()
	for _, node := range []string{"edge", "plain"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node}, Spec: corev1.PodSpec{NodeName: node,
			Containers:  []corev1.Container{{Name: "c", Image: "i"}},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](1)}}}}
		envtest.Create(t, client.CoreV1().Pods("app").Create, p)
	}
	envtest.EventuallyTrue(t, "the pods to be ready", func() bool {
		for _, name := range []string{"on-edge", "on-plain"} {
			p, err := client.CoreV1().Pods("app").Get(ctx, name, metav1.GetOptions{})
			if err != nil || !readyIs(p, corev1.ConditionTrue) {
				return false
			}
		}
		return true
	})
	sim.StopHeartbeat("edge")
	sim.StopHeartbeat("plain")
	envtest.EventuallyTrue(t, "the pod on the ordinary silent node to be evicted", func() bool {
		p, err := client.CoreV1().Pods("app").Get(ctx, "on-plain", metav1.GetOptions{})
		return err != nil || p.DeletionTimestamp != nil
	})
	envtest.EventuallyTrue(t, "the autonomous node to be tainted unreachable", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "edge", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
	})
	n := envtest.Get(t, client.CoreV1().Nodes().Get, "edge")
	var taints []string
	for _, taint := range n.Spec.Taints {
		taints = append(taints, taint.Key+":"+string(taint.Effect))
	}
	if !slices.Equal(taints, []string{corev1.TaintNodeUnreachable + ":NoSchedule"}) {
		t.Errorf("the silent autonomous node has taints %v, want only %s:NoSchedule", taints, corev1.TaintNodeUnreachable)
	}
	if p, err := client.CoreV1().Pods("app").Get(ctx, "on-edge", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the autonomous node's pod was evicted: %v %v", p, err)
	}
	// Its pod is not ready, as upstream's rule has it, so Services stop
	// sending it traffic from elsewhere.
	envtest.EventuallyTrue(t, "the autonomous node's pod to be marked not ready", func() bool {
		p, err := client.CoreV1().Pods("app").Get(ctx, "on-edge", metav1.GetOptions{})
		return err == nil && readyIs(p, corev1.ConditionFalse)
	})
}

// readyIs is true when pod's Ready condition has status.
func readyIs(pod *corev1.Pod, status corev1.ConditionStatus) bool {
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == status
	})
}

// TestPressureConditionsTaintTheNode: a node whose kubelet reports
// MemoryPressure, DiskPressure or PIDPressure True gets the matching
// NoSchedule taint, and loses it once the condition is False again, as
// upstream's TaintNodesByCondition; its own taints stay.
func TestPressureConditionsTaintTheNode(t *testing.T) {
	env := controllertest.New(t, corev1.NamespaceNodeLease)
	c, err := nodelifecycle.New(env.Context)
	if err != nil {
		t.Fatal(err)
	}
	c.Monitor = 200 * time.Millisecond
	sim := simnode.New(env.Context.Client, env.Context.Log)
	sim.LeaseInterval = 200 * time.Millisecond
	ctx := t.Context()
	own := corev1.Taint{Key: "dedicated", Value: "edge", Effect: corev1.TaintEffectNoSchedule}
	if err := sim.Add(ctx, simnode.Node{Name: "n1", Taints: []corev1.Taint{own}}); err != nil {
		t.Fatal(err)
	}
	env.Start(t, c, sim)
	client := env.Context.Client

	// set sets the node's pressure conditions, as its kubelet would.
	set := func(status map[corev1.NodeConditionType]corev1.ConditionStatus) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i, cond := range n.Status.Conditions {
				if s, ok := status[cond.Type]; ok {
					n.Status.Conditions[i].Status = s
				}
			}
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// taintsAre waits until the node's taints are own plus the given
	// NoSchedule keys.
	taintsAre := func(keys ...string) {
		t.Helper()
		want := []string{"dedicated:NoSchedule"}
		for _, k := range keys {
			want = append(want, k+":NoSchedule")
		}
		slices.Sort(want)
		var got []string
		envtest.EventuallyTrue(t, fmt.Sprintf("taints %v", want), func() bool {
			n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				return false
			}
			got = nil
			for _, taint := range n.Spec.Taints {
				got = append(got, taint.Key+":"+string(taint.Effect))
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		})
	}

	set(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeMemoryPressure: corev1.ConditionTrue})
	taintsAre(corev1.TaintNodeMemoryPressure)
	set(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeMemoryPressure: corev1.ConditionFalse,
		corev1.NodeDiskPressure: corev1.ConditionTrue, corev1.NodePIDPressure: corev1.ConditionTrue})
	taintsAre(corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure)
	set(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse})
	taintsAre()
}
