package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"orch/internal/simnode"
)

// TestDrainHonoursDisruptionBudget: a PodDisruptionBudget reports how many
// pods may go, `kubectl drain` evicts within it (retrying the evictions the
// budget refuses) until the node is empty, and the Deployment's pods end up
// on the other nodes.
func TestDrainHonoursDisruptionBudget(t *testing.T) {
	c := startSimCluster(t,
		simnode.Node{Name: "n1", Labels: map[string]string{"pool": "web"}}, simnode.Node{Name: "n2"})
	c.KubectlIn(t, deployment("web", 3, `
      nodeSelector: {pool: web}`), "apply", "-f", "-")
	c.podsBy(t, "default", "app=web", 3)
	c.Kubectl(t, "create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2")
	eventually(t, 30*time.Second, func() string {
		got := c.Kubectl(t, "get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed}")
		if got != "3 2 1" {
			return fmt.Sprintf("pdb status healthy/desired/allowed = %q, want 3 2 1", got)
		}
		return ""
	})
	c.Kubectl(t, "label", "node", "n2", "pool=web")
	r := c.Run(t, Cmd{Args: []string{"drain", "n1", "--timeout=120s"}})
	if r.Code != 0 || !strings.Contains(r.Stdout, "node/n1 drained") {
		t.Fatalf("drain: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("the budget never refused an eviction during the drain; stderr:\n%s", r.Stderr)
	}
	if perNode := c.podsBy(t, "default", "app=web", 3); perNode["n2"] != 3 {
		t.Fatalf("after the drain the pods are on %v, want all 3 on n2", perNode)
	}
}
