package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/images"
)

// edgeApp is what runs on the edge node: a pod that stays as it is and
// mounts a Secret, a pod to delete while the node is away, and a
// Deployment whose image changes meanwhile. Every pod tolerates the
// unreachable and not-ready taints for 5 s only: a node that is not
// autonomous would lose them seconds after it went silent.
var edgeApp = fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: conf}
stringData: {value: v1}
---
apiVersion: v1
kind: Pod
metadata: {name: keep}
spec:
  tolerations: %[2]s
  containers:
  - {name: keep, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 1000000000 & wait"], volumeMounts: [{name: conf, mountPath: /conf}]}
  volumes: [{name: conf, secret: {secretName: conf}}]
---
apiVersion: v1
kind: Pod
metadata: {name: gone}
spec:
  tolerations: %[2]s
  containers:
  - {name: gone, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 1000000000 & wait"]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      tolerations: %[2]s
      containers:
      - {name: app, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 1000000000 & wait"]}
`, images.BusyboxRef, `[{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5},
    {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}]`)

// TestAutonomousNodeCutOff: the link of an autonomous agent (in a network
// namespace of its own, on a bridge with the server) goes down. The node
// turns Unknown and is tainted unreachable:NoSchedule, never NoExecute;
// its pods are marked not Ready but stay, and no container restarts. While
// it is away a pod is deleted, the Deployment's image changes and the
// Secret is rotated. With the link back the node is Ready within 60 s and
// converges: the deleted pod's container is gone, the Deployment runs one
// pod of the new image, the unchanged pod keeps its container and reads
// the new Secret, and every status names the running container.
//
// ORCH_E2E_CUT (a duration) holds the cut that long; the agent's RSS is
// logged every minute of it (docs/benchmarks.md has a real run).
func TestAutonomousNodeCutOff(t *testing.T) {
	requireRuntime(t)
	hold := 20 * time.Second
	if v := os.Getenv("ORCH_E2E_CUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ORCH_E2E_CUT: %v", err)
		}
		hold = d
	}
	const hostIP, nodeIP = "10.199.85.1", "10.199.85.11"
	bridge := makeBridge(t, "oabr", hostIP)
	netns := fmt.Sprintf("orch-e2e-%d-edge", os.Getpid())
	link := fmt.Sprintf("oee%d", os.Getpid()%100000)
	attachNetns(t, netns, link, bridge, nodeIP, hostIP)
	s := StartServerAt(t, hostIP)
	a := StartAgentIn(t, netns, fmt.Sprintf("https://%s:%d", hostIP, s.Port), s.Token(), "e2e-edge", nodeIP, "--autonomous")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-edge")

	s.KubectlIn(t, edgeApp, "apply", "-f", "-")
	before := map[string]string{} // container name → its one running container
	eventually(t, 2*time.Minute, func() string {
		for _, name := range []string{"keep", "gone", "app"} {
			ids := runningContainers(t, a.DataDir, name)
			if len(ids) != 1 {
				return fmt.Sprintf("%s has running containers %v", name, ids)
			}
			before[name] = ids[0]
		}
		return ""
	})
	appPod := podsOf(t, client, "app=app")[0].Name

	mustRun(t, "ip", "link", "set", link, "down")
	cut := time.Now()
	eventually(t, 2*time.Minute, func() string {
		node, err := client.CoreV1().Nodes().Get(context.Background(), "e2e-edge", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !nodeReadyIs(node, corev1.ConditionUnknown) || !hasTaint(node, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) {
			return fmt.Sprintf("node conditions %v, taints %v", node.Status.Conditions, node.Spec.Taints)
		}
		for _, p := range podsOf(t, client, "") {
			if podReady(&p) != corev1.ConditionFalse {
				return p.Name + " is not marked Ready=False yet"
			}
		}
		return ""
	})
	t.Logf("the node was Unknown, tainted and its pods not Ready %v after the cut", time.Since(cut).Round(time.Second))

	s.Kubectl(t, "delete", "pod", "gone", "--wait=false")
	s.Kubectl(t, "patch", "deployment", "app", "-p",
		fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q,"command":["/pause"]}]}}}}`, images.PauseRef))
	s.Kubectl(t, "patch", "secret", "conf", "-p", `{"stringData":{"value":"v2"}}`)

	// Away for hold: the node is never tainted NoExecute, no pod is
	// evicted and no container restarts; the agent's RSS every minute.
	for end, sample := time.Now().Add(hold), time.Now(); time.Now().Before(end); time.Sleep(5 * time.Second) {
		node, err := client.CoreV1().Nodes().Get(context.Background(), "e2e-edge", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range node.Spec.Taints {
			if tt.Effect == corev1.TaintEffectNoExecute {
				t.Fatalf("the autonomous node is tainted %v", tt)
			}
		}
		for _, name := range []string{"keep", appPod} {
			p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp != nil {
				t.Fatalf("pod %s was evicted or deleted while the node was away: %v", name, err)
			}
		}
		for name, id := range before {
			if got := runningContainers(t, a.DataDir, name); len(got) != 1 || got[0] != id {
				t.Fatalf("away, container %s runs %v, want %s alone", name, got, id)
			}
		}
		if time.Since(sample) >= time.Minute {
			t.Logf("away %v: agent RSS %.1f MiB", time.Since(cut).Round(time.Second), rssMiB(t, a.cmd.Process.Pid))
			sample = time.Now()
		}
	}
	t.Logf("away %v in all: agent RSS %.1f MiB", time.Since(cut).Round(time.Second), rssMiB(t, a.cmd.Process.Pid))

	mustRun(t, "ip", "link", "set", link, "up")
	back := time.Now()
	eventually(t, 60*time.Second, func() string {
		node, err := client.CoreV1().Nodes().Get(context.Background(), "e2e-edge", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !nodeReadyIs(node, corev1.ConditionTrue) {
			return fmt.Sprintf("node conditions %v", node.Status.Conditions)
		}
		return ""
	})
	t.Logf("the node was Ready %v after the link came back", time.Since(back).Round(100*time.Millisecond))

	eventually(t, 2*time.Minute, func() string {
		if got := runningContainers(t, a.DataDir, "gone"); len(got) > 0 {
			return fmt.Sprintf("the deleted pod's container still runs: %v", got)
		}
		pods := podsOf(t, client, "")
		var names []string
		for _, p := range pods {
			names = append(names, fmt.Sprintf("%s (%s on %q)", p.Name, p.Status.Phase, p.Spec.NodeName))
		}
		if got := runningContainers(t, a.DataDir, "app"); len(got) != 1 || got[0] == before["app"] {
			return fmt.Sprintf("the Deployment's containers %v (before the change %s); pods %v", got, before["app"], names)
		}
		if len(pods) != 2 || !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == "keep" }) {
			return fmt.Sprintf("pods %v, want keep and one of the Deployment's", names)
		}
		for _, p := range pods {
			if problem := currentStatus(t, a.DataDir, &p, 0); problem != "" {
				return problem
			}
			if p.Name != "keep" && p.Spec.Containers[0].Image != images.PauseRef {
				return fmt.Sprintf("the Deployment's pod %s has image %s, want %s", p.Name, p.Spec.Containers[0].Image, images.PauseRef)
			}
		}
		if r := s.Run(t, Cmd{Args: []string{"exec", "keep", "--", "cat", "/conf/value"}}); r.Stdout != "v2" {
			return fmt.Sprintf("keep reads %q from the rotated Secret, want v2 (%s)", r.Stdout, r.Stderr)
		}
		return ""
	})
	if got := runningContainers(t, a.DataDir, "keep"); len(got) != 1 || got[0] != before["keep"] {
		t.Errorf("the unchanged pod keep runs %v, want its container from before the cut, %s", got, before["keep"])
	}
}

// currentStatus says what is stale in p's status: it must be Running and
// Ready, and each container's status must name the one container the
// runtime of the agent with dataDir runs for it, restarted restarts times.
func currentStatus(t *testing.T, dataDir string, p *corev1.Pod, restarts int32) string {
	if p.Status.Phase != corev1.PodRunning || podReady(p) != corev1.ConditionTrue {
		return fmt.Sprintf("pod %s is %s, conditions %v", p.Name, p.Status.Phase, p.Status.Conditions)
	}
	for _, cs := range p.Status.ContainerStatuses {
		ids := runningContainers(t, dataDir, cs.Name)
		if cs.RestartCount != restarts || len(ids) != 1 || cs.ContainerID != "containerd://"+ids[0] {
			return fmt.Sprintf("pod %s: container %s %s restarts %d, the runtime runs %v", p.Name, cs.Name, cs.ContainerID, cs.RestartCount, ids)
		}
	}
	return ""
}

// podsOf are the pods of the default namespace with the label selector
// ("": all).
func podsOf(t *testing.T, client kubernetes.Interface, selector string) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// podReady is the status of p's Ready condition.
func podReady(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}
