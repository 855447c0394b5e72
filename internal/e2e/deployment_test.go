package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/simnode"
)

// TestDeploymentOnSimulatedNodes is issue 3's acceptance item 1 with the real
// binary and kubectl: on 3 simulated nodes a 5-replica deployment spreads over
// the nodes, and set image, rollout status/history/undo and scale behave.
func TestDeploymentOnSimulatedNodes(t *testing.T) {
	c := startSimCluster(t, simnode.Node{Name: "sim-a"}, simnode.Node{Name: "sim-b"}, simnode.Node{Name: "sim-c"})
	s, client, ctx := c.Server, c.client, c.ctx

	s.Kubectl(t, "create", "deployment", "web", "--image=registry.example/web:1", "--replicas=5")
	s.Kubectl(t, "rollout", "status", "deployment/web", "--timeout=90s")
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		perNode[p.Spec.NodeName]++
	}
	if len(pods.Items) != 5 || len(perNode) != 3 {
		t.Fatalf("%d pods over nodes %v, want 5 spread over the 3 nodes", len(pods.Items), perNode)
	}
	for node, n := range perNode {
		if n > 2 {
			t.Errorf("%d pods on %s: the scheduler does not spread", n, node)
		}
	}

	s.Kubectl(t, "set", "image", "deployment/web", "web=registry.example/web:2")
	s.Kubectl(t, "rollout", "status", "deployment/web", "--timeout=90s")
	history := s.Kubectl(t, "rollout", "history", "deployment/web")
	if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
		t.Errorf("rollout history has no revisions 1 and 2:\n%s", history)
	}
	s.Kubectl(t, "rollout", "undo", "deployment/web")
	s.Kubectl(t, "rollout", "status", "deployment/web", "--timeout=90s")
	if got := s.Kubectl(t, "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"); got != "registry.example/web:1 3" {
		t.Errorf("after undo: %q, want image :1 at revision 3", got)
	}

	s.Kubectl(t, "scale", "deployment/web", "--replicas=0")
	eventually(t, 60*time.Second, func() string {
		p, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if len(p.Items) != 0 {
			return "pods remain after scaling to 0"
		}
		return ""
	})
	s.Kubectl(t, "scale", "deployment/web", "--replicas=3")
	s.Kubectl(t, "rollout", "status", "deployment/web", "--timeout=90s")
	if got := s.Kubectl(t, "get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}"); got != "3" {
		t.Errorf("after scaling back: %s ready, want 3", got)
	}
}
