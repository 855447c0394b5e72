package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/simnode"
)

// simCluster is a real orch server with simulated nodes that play the
// kubelet for pods bound to them.
type simCluster struct {
	*Server
	client kubernetes.Interface
	sim    *simnode.Simulator
	ctx    context.Context
}

// startSimCluster starts the server and the given simulated nodes; both stop
// when the test ends.
func startSimCluster(t *testing.T, nodes ...simnode.Node) *simCluster {
	t.Helper()
	s := StartServer(t)
	client := kubernetes.NewForConfigOrDie(s.RestConfig(t))
	ctx, cancel := context.WithCancel(context.Background())
	sim := simnode.New(client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := &simCluster{Server: s, client: client, sim: sim, ctx: ctx}
	for _, n := range nodes {
		c.addNode(t, n)
	}
	done := make(chan struct{})
	go func() { defer close(done); sim.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func (c *simCluster) addNode(t *testing.T, n simnode.Node) {
	t.Helper()
	if err := c.sim.Add(c.ctx, n); err != nil {
		t.Fatal(err)
	}
}

// podsBy waits until the pods in ns matching selector number want and are
// all Running, and returns how many run on each node.
func (c *simCluster) podsBy(t *testing.T, ns, selector string, want int) map[string]int {
	t.Helper()
	var perNode map[string]int
	eventually(t, 60*time.Second, func() string {
		pods, err := c.client.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err.Error()
		}
		perNode = map[string]int{}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
				perNode[p.Spec.NodeName]++
			}
		}
		if running != want || len(pods.Items) != want {
			return fmt.Sprintf("%d pods, %d running (%v); want %d running", len(pods.Items), running, perNode, want)
		}
		return ""
	})
	return perNode
}

// expectPending waits until pod ns/name reports PodScheduled=False and
// `kubectl describe` shows a FailedScheduling event with message.
func (c *simCluster) expectPending(t *testing.T, ns, name, message string) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		r := c.Run(t, Cmd{Args: []string{"-n", ns, "describe", "pod", name}})
		if !strings.Contains(r.Stdout, "FailedScheduling") || !strings.Contains(r.Stdout, message) {
			return fmt.Sprintf("describe pod %s shows no FailedScheduling %q:\n%s", name, message, r.Stdout)
		}
		return ""
	})
	pod, err := c.client.CoreV1().Pods(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "" {
		t.Fatalf("pod %s was bound to %s", name, pod.Spec.NodeName)
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && (cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable) {
			t.Fatalf("pod %s PodScheduled is %s/%s, want False/Unschedulable", name, cond.Status, cond.Reason)
		}
	}
}

// TestScheduling is issue 3's acceptance items 2 and 3 through the real
// binary and kubectl, on three simulated nodes in three zones, the third
// tainted: taints and tolerations, nodeSelector, required anti-affinity,
// topology spread, priority preemption, and a pod that fits nowhere until a
// node is added.
func TestScheduling(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	c := startSimCluster(t,
		simnode.Node{Name: "n1", CPU: "2", Memory: "4Gi", Labels: map[string]string{"zone": "a", "disk": "ssd"}},
		simnode.Node{Name: "n2", CPU: "2", Memory: "4Gi", Labels: map[string]string{"zone": "b"}},
		simnode.Node{Name: "n3", CPU: "2", Memory: "4Gi", Labels: map[string]string{"zone": "c"}, Taints: []corev1.Taint{dedicated}},
	)
	for _, ns := range []string{"taints", "selector", "anti", "spread", "preempt", "nofit"} {
		c.Kubectl(t, "create", "namespace", ns)
	}
	t.Run("taints", func(t *testing.T) { testTaints(t, c) })
	t.Run("nodeSelector", func(t *testing.T) { testNodeSelector(t, c) })
	t.Run("antiAffinity", func(t *testing.T) { testAntiAffinity(t, c) })
	t.Run("topologySpread", func(t *testing.T) { testTopologySpread(t, c) })
	t.Run("preemption", func(t *testing.T) { testPreemption(t, c) })
	t.Run("fitsNowhereUntilNodeAdded", func(t *testing.T) { testFitsNowhere(t, c) })
}

const tolerateDedicated = `
      tolerations:
      - {key: dedicated, operator: Equal, value: db, effect: NoSchedule}`

// deployment renders a Deployment of the pause-like image with extra pod
// spec lines (indented for the pod spec).
func deployment(name string, replicas int, podSpec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - {name: c, image: registry.example/app:1}%[3]s
`, name, replicas, podSpec)
}

func testTaints(t *testing.T, c *simCluster) {
	c.KubectlIn(t, deployment("plain", 6, ""), "-n", "taints", "apply", "-f", "-")
	if perNode := c.podsBy(t, "taints", "app=plain", 6); perNode["n3"] != 0 {
		t.Errorf("pods without a toleration landed on the tainted node: %v", perNode)
	}
	c.KubectlIn(t, deployment("tolerant", 1, tolerateDedicated+`
      nodeSelector: {zone: c}`), "-n", "taints", "apply", "-f", "-")
	if perNode := c.podsBy(t, "taints", "app=tolerant", 1); perNode["n3"] != 1 {
		t.Errorf("the tolerating pod is not on the tainted node: %v", perNode)
	}
	c.Kubectl(t, "-n", "taints", "run", "intolerant", "--image=registry.example/app:1", "--overrides", `{"spec":{"nodeSelector":{"zone":"c"}}}`)
	c.expectPending(t, "taints", "intolerant",
		"0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 2 node(s) didn't match Pod's node affinity/selector.")
}

func testNodeSelector(t *testing.T, c *simCluster) {
	c.KubectlIn(t, deployment("fast", 3, `
      nodeSelector: {disk: ssd}`), "-n", "selector", "apply", "-f", "-")
	if perNode := c.podsBy(t, "selector", "app=fast", 3); perNode["n1"] != 3 {
		t.Errorf("pods with nodeSelector disk=ssd are not all on n1: %v", perNode)
	}
	c.Kubectl(t, "-n", "selector", "run", "nowhere", "--image=registry.example/app:1", "--overrides", `{"spec":{"nodeSelector":{"disk":"nvme"}}}`)
	c.expectPending(t, "selector", "nowhere", "didn't match Pod's node affinity/selector")
}

func testAntiAffinity(t *testing.T, c *simCluster) {
	c.KubectlIn(t, deployment("cache", 3, tolerateDedicated+`
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: cache}}
            topologyKey: kubernetes.io/hostname`), "-n", "anti", "apply", "-f", "-")
	perNode := c.podsBy(t, "anti", "app=cache", 3)
	if len(perNode) != 3 {
		t.Fatalf("anti-affine pods share nodes: %v", perNode)
	}
	c.Kubectl(t, "-n", "anti", "scale", "deployment/cache", "--replicas=4")
	var fourth string
	eventually(t, 60*time.Second, func() string {
		pods, err := c.client.CoreV1().Pods("anti").List(c.ctx, metav1.ListOptions{LabelSelector: "app=cache", FieldSelector: "spec.nodeName="})
		if err != nil {
			return err.Error()
		}
		if len(pods.Items) != 1 {
			return fmt.Sprintf("%d unscheduled cache pods, want 1", len(pods.Items))
		}
		fourth = pods.Items[0].Name
		return ""
	})
	c.expectPending(t, "anti", fourth, "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")
}

func testTopologySpread(t *testing.T, c *simCluster) {
	c.KubectlIn(t, deployment("spread", 6, tolerateDedicated+`
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: spread}}`), "-n", "spread", "apply", "-f", "-")
	perNode := c.podsBy(t, "spread", "app=spread", 6)
	for _, node := range []string{"n1", "n2", "n3"} {
		if perNode[node] != 2 {
			t.Fatalf("6 pods spread with maxSkew 1 over 3 zones: %v, want 2 per zone", perNode)
		}
	}
}

func testPreemption(t *testing.T, c *simCluster) {
	c.KubectlIn(t, `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
`, "apply", "-f", "-")
	c.KubectlIn(t, deployment("low", 3, tolerateDedicated+`
      containers:
      - name: c
        image: registry.example/app:1
        resources: {requests: {cpu: 1500m}}`), "-n", "preempt", "apply", "-f", "-")
	if perNode := c.podsBy(t, "preempt", "app=low", 3); len(perNode) != 3 {
		t.Fatalf("low-priority pods (1.5 of 2 cpus each) should fill every node: %v", perNode)
	}
	c.KubectlIn(t, `apiVersion: v1
kind: Pod
metadata: {name: urgent, labels: {app: urgent}}
spec:
  priorityClassName: high
  tolerations:
  - {key: dedicated, operator: Equal, value: db, effect: NoSchedule}
  containers:
  - name: c
    image: registry.example/app:1
    resources: {requests: {cpu: "1"}}
`, "-n", "preempt", "apply", "-f", "-")
	perNode := c.podsBy(t, "preempt", "app=urgent", 1)
	var node string
	for n := range perNode {
		node = n
	}
	// The victim's ReplicaSet recreates it; it cannot fit anywhere now.
	eventually(t, 60*time.Second, func() string {
		pods, err := c.client.CoreV1().Pods("preempt").List(c.ctx, metav1.ListOptions{LabelSelector: "app=low"})
		if err != nil {
			return err.Error()
		}
		onNode, pending := 0, 0
		for _, p := range pods.Items {
			switch p.Spec.NodeName {
			case node:
				onNode++
			case "":
				pending++
			}
		}
		if onNode != 0 || pending != 1 {
			return fmt.Sprintf("%d low pods on %s (want 0, preempted) and %d pending (want 1)", onNode, node, pending)
		}
		return ""
	})
	events := c.Kubectl(t, "-n", "preempt", "get", "events", "--field-selector", "reason=Preempted", "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, "Preempted by pod") {
		t.Errorf("no Preempted event on the victim: %q", events)
	}
}

func testFitsNowhere(t *testing.T, c *simCluster) {
	c.Kubectl(t, "-n", "nofit", "run", "huge", "--image=registry.example/app:1", "--overrides",
		`{"spec":{"containers":[{"name":"huge","image":"registry.example/app:1","resources":{"requests":{"cpu":"16"}}}]}}`)
	c.expectPending(t, "nofit", "huge", "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 2 Insufficient cpu.")
	c.addNode(t, simnode.Node{Name: "n4", CPU: "32", Memory: "64Gi", Labels: map[string]string{"zone": "d"}})
	eventually(t, 60*time.Second, func() string {
		pod, err := c.client.CoreV1().Pods("nofit").Get(c.ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if pod.Spec.NodeName != "n4" || pod.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("huge is on %q, %s; want Running on the new node n4", pod.Spec.NodeName, pod.Status.Phase)
		}
		return ""
	})
}
