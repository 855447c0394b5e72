package daemonset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/clock"

	"orch/internal/envtest"
	"orch/internal/simnode"
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

// kubectl rollout status, history and undo work on the revisions and
// status the controller writes; revisionHistoryLimit trims old revisions.
func TestKubectlRollout(t *testing.T) {
	c := startCluster(t, clock.RealClock{}, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	one := int32(1)
	ds := c.createDS(newDS("web", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = &one }))
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
	c.mustKubectl("web    2         2         2       2            2", "get", "ds", "web")

	c.updateDS("web", func(ds *appsv1.DaemonSet) {
		ds.Annotations = map[string]string{"kubernetes.io/change-cause": "to v2"}
		ds.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	})
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
	out := c.mustKubectl("to v2", "rollout", "history", "ds/web")
	if !strings.Contains(out, "1         <none>") || !strings.Contains(out, "2         to v2") {
		t.Fatalf("history:\n%s", out)
	}
	c.mustKubectl("busybox:1", "rollout", "history", "ds/web", "--revision=1")

	c.mustKubectl("daemonset.apps/web rolled back", "rollout", "undo", "ds/web")
	envtest.EventuallyTrue(t, "busybox:1 again, as revision 3", func() bool {
		revs := c.revisions(ds)
		if len(revs) != 2 || revs[0].Revision != 2 || revs[1].Revision != 3 {
			return false
		}
		for _, p := range c.pods("web") {
			if p.Spec.Containers[0].Image != "busybox:1" || p.Labels[hashLabel] != revs[1].Labels[hashLabel] {
				return false
			}
		}
		return c.runsOn("web", "n1", "n2") && statusIs(c.ds("web"), 2, 2, 0, 2, 2, 2)
	})
	c.mustKubectl("current template already matches revision 3", "rollout", "undo", "ds/web", "--to-revision=3")
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")

	// A third template: revision 2 is beyond the limit of one old revision.
	c.updateDS("web", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "busybox:3" })
	envtest.EventuallyTrue(t, "revisions 3 and 4 kept", func() bool {
		revs := c.revisions(ds)
		return len(revs) == 2 && revs[0].Revision == 3 && revs[1].Revision == 4
	})
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
}
