package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/simnode"
)

// TestGarbageCollection is part of issue 3's acceptance item 4: deleting a
// Deployment with kubectl's three cascade modes (background, foreground,
// orphan) removes or keeps its ReplicaSets and pods as upstream does, and
// deleting a namespace removes the workloads in it.
func TestGarbageCollection(t *testing.T) {
	c := startSimCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	for _, name := range []string{"bg", "fg", "orphan"} {
		c.Kubectl(t, "create", "deployment", name, "--image=registry.example/app:1", "--replicas=2")
	}
	for _, name := range []string{"bg", "fg", "orphan"} {
		c.podsBy(t, "default", "app="+name, 2)
	}

	t.Run("background", func(t *testing.T) {
		c.Kubectl(t, "delete", "deployment", "bg", "--cascade=background")
		c.waitGone(t, "default", "app=bg")
	})
	t.Run("foreground", func(t *testing.T) {
		// kubectl waits for the deployment to be gone, which happens only
		// after its dependents are (the foregroundDeletion finalizer).
		c.Kubectl(t, "delete", "deployment", "fg", "--cascade=foreground", "--wait=true", "--timeout=60s")
		pods, err := c.client.CoreV1().Pods("default").List(c.ctx, metav1.ListOptions{LabelSelector: "app=fg"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				t.Errorf("pod %s outlived its foreground-deleted deployment", p.Name)
			}
		}
		c.waitGone(t, "default", "app=fg")
	})
	t.Run("orphan", func(t *testing.T) {
		c.Kubectl(t, "delete", "deployment", "orphan", "--cascade=orphan", "--wait=true")
		rs := c.Kubectl(t, "get", "rs", "-l", "app=orphan", "-o", "jsonpath={range .items[*]}{.metadata.name} owners={.metadata.ownerReferences}{\"\\n\"}{end}")
		if strings.Count(rs, "owners=\n") != 1 || strings.Count(rs, "\n") != 1 {
			t.Fatalf("after an orphaning delete want one ReplicaSet without owners, got:\n%s", rs)
		}
		if perNode := c.podsBy(t, "default", "app=orphan", 2); len(perNode) == 0 {
			t.Fatal("orphaned pods are gone")
		}
	})
	t.Run("namespace", func(t *testing.T) {
		c.Kubectl(t, "create", "namespace", "doomed")
		c.Kubectl(t, "-n", "doomed", "create", "deployment", "web", "--image=registry.example/app:1", "--replicas=3")
		c.Kubectl(t, "-n", "doomed", "create", "service", "clusterip", "web", "--tcp=80:80")
		c.podsBy(t, "doomed", "app=web", 3)
		c.Kubectl(t, "delete", "namespace", "doomed", "--timeout=90s")
		r := c.Run(t, Cmd{Args: []string{"get", "namespace", "doomed"}})
		if r.Code == 0 || !strings.Contains(r.Stderr, "NotFound") {
			t.Fatalf("namespace still there after delete: %q %q", r.Stdout, r.Stderr)
		}
		c.waitGone(t, "doomed", "app=web")
	})
}

// waitGone waits until no ReplicaSet and no pod in ns matches selector.
func (c *simCluster) waitGone(t *testing.T, ns, selector string) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		rs, err := c.client.AppsV1().ReplicaSets(ns).List(c.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err.Error()
		}
		pods, err := c.client.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err.Error()
		}
		if len(rs.Items)+len(pods.Items) != 0 {
			return fmt.Sprintf("%d ReplicaSets and %d pods of %s remain", len(rs.Items), len(pods.Items), selector)
		}
		return ""
	})
}
