package deployment

import (
	"strings"
	"testing"

	"k8s.io/utils/clock"

	"orch/internal/envtest"
)

// kubectl runs the real kubectl against the test apiserver and returns
// what it printed.
func (c *cluster) kubectl(args ...string) (string, error) {
	c.t.Helper()
	return envtest.Kubectl(c.t, c.config, args...)
}

// mustKubectl runs kubectl and fails the test unless it prints want.
func (c *cluster) mustKubectl(want string, args ...string) string {
	c.t.Helper()
	return envtest.KubectlContains(c.t, c.config, want, args...)
}

// The acceptance scenario of a new user (without nodes: the test plays the
// kubelet): create, set image, rollout status/history/undo/restart/pause/
// resume, and scale to zero and back, all with the real kubectl.
func TestKubectlRollout(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.kubelet("web")
	c.mustKubectl("deployment.apps/web created", "create", "deployment", "web", "--image=x", "--replicas=5")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	c.mustKubectl("5/5", "get", "deployment", "web")
	first := c.replicaSets("web")[0].Name

	c.mustKubectl("deployment.apps/web image updated", "set", "image", "deployment/web", "x=y")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	hist := c.mustKubectl("REVISION", "rollout", "history", "deployment/web")
	if !strings.Contains(hist, "1 ") || !strings.Contains(hist, "2 ") {
		t.Fatalf("history %q, want revisions 1 and 2", hist)
	}

	c.mustKubectl("deployment.apps/web rolled back", "rollout", "undo", "deployment/web")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	c.eventually("web", "revision 3 on the first ReplicaSet", func() (bool, error) {
		d := c.deployment("web")
		for _, rs := range c.replicaSets("web") {
			if rs.Name == first {
				return d.Annotations[revisionAnnotation] == "3" && rs.Annotations[revisionAnnotation] == "3" &&
					rs.Annotations[revisionHistoryAnnotation] == "1" && *rs.Spec.Replicas == 5 &&
					d.Spec.Template.Spec.Containers[0].Image == "x", nil
			}
		}
		return false, nil
	})
	hist = c.mustKubectl("REVISION", "rollout", "history", "deployment/web")
	if strings.Contains(hist, "\n1 ") || !strings.Contains(hist, "\n2 ") || !strings.Contains(hist, "\n3 ") {
		t.Fatalf("history %q, want revisions 2 and 3", hist)
	}
	c.mustKubectl("Image:\ty", "rollout", "history", "deployment/web", "--revision=2")
	c.mustKubectl("deployment.apps/web rolled back", "rollout", "undo", "deployment/web", "--to-revision=2")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	if d := c.deployment("web"); d.Spec.Template.Spec.Containers[0].Image != "y" || d.Annotations[revisionAnnotation] != "4" {
		t.Fatalf("after undo --to-revision=2: image %s revision %s", d.Spec.Template.Spec.Containers[0].Image, d.Annotations[revisionAnnotation])
	}

	c.mustKubectl("deployment.apps/web scaled", "scale", "deployment/web", "--replicas=0")
	c.eventually("web", "no pods", func() (bool, error) {
		d := c.deployment("web")
		return len(c.pods("web")) == 0 && d.Status.Replicas == 0 && d.Status.ObservedGeneration == d.Generation, nil
	})
	c.mustKubectl("deployment.apps/web scaled", "scale", "deployment/web", "--replicas=5")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	if n := len(c.pods("web")); n != 5 {
		t.Fatalf("%d pods after scaling back, want 5", n)
	}

	c.mustKubectl("deployment.apps/web paused", "rollout", "pause", "deployment/web")
	c.mustKubectl("deployment.apps/web image updated", "set", "image", "deployment/web", "x=z")
	if _, err := c.kubectl("rollout", "undo", "deployment/web"); err == nil {
		t.Fatal("undo of a paused deployment succeeded")
	}
	c.mustKubectl("deployment.apps/web resumed", "rollout", "resume", "deployment/web")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	c.mustKubectl("deployment.apps/web restarted", "rollout", "restart", "deployment/web")
	c.mustKubectl(`deployment "web" successfully rolled out`, "rollout", "status", "deployment/web", "--timeout=90s")
	d := c.deployment("web")
	if d.Annotations[revisionAnnotation] != "6" || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Fatalf("after restart: revision %s template annotations %v", d.Annotations[revisionAnnotation], d.Spec.Template.Annotations)
	}
	c.mustKubectl("Scaled up replica set web-", "describe", "deployment", "web")
}
