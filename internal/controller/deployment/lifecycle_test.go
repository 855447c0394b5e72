package deployment

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func TestPauseAndResume(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.create(withRolling(newDeployment("web", 4, "v1"), "1", "1"))
	c.kubelet("web")
	c.eventually("web", "v1 rolled out", func() (bool, error) { return complete(c.deployment("web")), nil })

	c.update("web", func(d *appsv1.Deployment) { d.Spec.Paused = true })
	c.eventually("web", "DeploymentPaused", func() (bool, error) {
		p := condition(c.deployment("web"), appsv1.DeploymentProgressing)
		return p.Status == corev1.ConditionUnknown && p.Reason == reasonPaused && p.Message == "Deployment is paused", nil
	})
	// While paused, a template change rolls nothing out, but scaling works.
	c.update("web", setImage("v2"))
	c.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(6)) })
	c.eventually("web", "scaled to 6 while paused", func() (bool, error) {
		d := c.deployment("web")
		return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 6 && len(c.pods("web")) == 6, nil
	})
	if rss := c.replicaSets("web"); len(rss) != 1 || rss[0].Spec.Template.Spec.Containers[0].Image != "v1" {
		t.Fatalf("a paused deployment rolled out: %d ReplicaSets", len(rss))
	}
	if d := c.deployment("web"); d.Annotations[revisionAnnotation] != "1" || d.Status.UpdatedReplicas != 0 {
		t.Fatalf("revision %q updated %d while paused", d.Annotations[revisionAnnotation], d.Status.UpdatedReplicas)
	}

	c.update("web", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	c.eventually("web", "v2 rolled out after resume", func() (bool, error) {
		d := c.deployment("web")
		return complete(d) && d.Annotations[revisionAnnotation] == "2" && len(c.pods("web")) == 6 && c.pods("web")[0].Spec.Containers[0].Image == "v2", nil
	})
}

// revisionHistoryLimit old ReplicaSets are kept (scaled to zero); older
// ones are deleted.
func TestRevisionHistoryLimit(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	d := withRolling(newDeployment("web", 2, "v1"), "1", "0")
	d.Spec.RevisionHistoryLimit = ptr(int32(1))
	c.create(d)
	c.kubelet("web")
	for i := 2; i <= 4; i++ {
		c.eventually("web", "rolled out", func() (bool, error) { return complete(c.deployment("web")), nil })
		c.update("web", setImage(fmt.Sprintf("v%d", i)))
	}
	c.eventually("web", "v4 rolled out and one old ReplicaSet left", func() (bool, error) {
		d := c.deployment("web")
		return complete(d) && d.Annotations[revisionAnnotation] == "4" && len(c.replicaSets("web")) == 2, nil
	})
	revisions := map[string]string{}
	for _, rs := range c.replicaSets("web") {
		revisions[rs.Annotations[revisionAnnotation]] = rs.Spec.Template.Spec.Containers[0].Image
	}
	if revisions["4"] != "v4" || revisions["3"] != "v3" {
		t.Fatalf("kept revisions %v, want 3 (v3) and 4 (v4)", revisions)
	}
}

// With the clock injected, a rollout whose pods never become ready fails
// its progress deadline when the clock passes it.
func TestProgressDeadlineExceeded(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startCluster(t, clk)
	d := newDeployment("stuck", 3, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr(int32(600))
	c.create(d)
	var rsName string
	c.eventually("stuck", "a progressing rollout", func() (bool, error) {
		d := c.deployment("stuck")
		rss := c.replicaSets("stuck")
		if len(rss) != 1 {
			return false, nil
		}
		rsName = rss[0].Name
		p := condition(d, appsv1.DeploymentProgressing)
		return d.Status.Replicas == 3 && p.Status == corev1.ConditionTrue && d.Status.ObservedGeneration == d.Generation, nil
	})
	a := condition(c.deployment("stuck"), appsv1.DeploymentAvailable)
	if a.Status != corev1.ConditionFalse || a.Reason != reasonMinimumUnavailable || a.Message != "Deployment does not have minimum availability." {
		t.Fatalf("Available %+v", a)
	}
	// Nothing happens before the deadline ...
	c.eventually("stuck", "a progress check on the clock", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(5 * time.Minute)
	if p := condition(c.deployment("stuck"), appsv1.DeploymentProgressing); p.Reason == reasonTimedOut {
		t.Fatalf("timed out early: %+v", p)
	}
	// ... and the condition flips once it has passed.
	clk.Step(5*time.Minute + 2*time.Second)
	c.eventually("stuck", "ProgressDeadlineExceeded", func() (bool, error) {
		p := condition(c.deployment("stuck"), appsv1.DeploymentProgressing)
		return p.Status == corev1.ConditionFalse && p.Reason == reasonTimedOut &&
			p.Message == fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName), nil
	})
	// Progress afterwards does not clear the timeout until the rollout
	// completes; then it reports success.
	c.readyAll("stuck")
	c.eventually("stuck", "complete after all", func() (bool, error) { return complete(c.deployment("stuck")), nil })
}

// An orphan ReplicaSet with the Deployment's template is adopted as its
// new ReplicaSet instead of creating another.
func TestAdoptsOrphanReplicaSet(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	d := newDeployment("web", 2, "v1")
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "handmade", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(int32(2)),
			Selector: d.Spec.Selector,
			Template: d.Spec.Template,
		},
	}
	if _, err := c.client.AppsV1().ReplicaSets("default").Create(bg, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller adopts what its cache holds: a Deployment it sees
	// before the ReplicaSet gets a new one (as upstream's would).
	c.eventually("web", "the handmade ReplicaSet in the controller's cache", func() (bool, error) {
		_, err := c.cached.ReplicaSets("default").Get("handmade")
		return err == nil, nil
	})
	created := c.create(d)
	c.kubelet("web")
	c.eventually("web", "adopted and complete", func() (bool, error) {
		rss := c.replicaSets("web")
		return complete(c.deployment("web")) && len(rss) == 1 && metav1.IsControlledBy(&rss[0], created), nil
	})
	if got := c.replicaSets("web")[0]; got.Name != "handmade" || got.Annotations[revisionAnnotation] != "1" {
		t.Fatalf("ReplicaSet %s revision %q", got.Name, got.Annotations[revisionAnnotation])
	}
}

// Scaling in the middle of a rollout shares the new replicas out between
// the old and the new ReplicaSet in proportion.
func TestProportionalScaling(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.create(withRolling(newDeployment("web", 10, "v1"), "3", "2"))
	c.eventually("web", "v1 rolled out", func() (bool, error) {
		c.readyAll("web")
		return complete(c.deployment("web")), nil
	})
	// v2 never becomes ready: the rollout stops at old 8, new 5.
	c.update("web", setImage("v2"))
	sizes := func() (old, cur int32) {
		for _, rs := range c.replicaSets("web") {
			if rs.Spec.Template.Spec.Containers[0].Image == "v1" {
				old = *rs.Spec.Replicas
			} else {
				cur = *rs.Spec.Replicas
			}
		}
		return
	}
	c.eventually("web", "stuck at 8 old and 5 new", func() (bool, error) {
		o, n := sizes()
		return o == 8 && n == 5, nil
	})
	// 20 replicas, max 23: the 10 more go 8 -> 14 and 5 -> 9.
	c.update("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(20)) })
	c.eventually("web", "proportionally scaled", func() (bool, error) {
		o, n := sizes()
		return o == 14 && n == 9, nil
	})
	for _, rs := range c.replicaSets("web") {
		if rs.Annotations[desiredReplicasAnnotation] != "20" || rs.Annotations[maxReplicasAnnotation] != "23" {
			t.Fatalf("%s annotations %v", rs.Name, rs.Annotations)
		}
	}
}

// Old clients asked for a rollback through an annotation; the controller
// still honours it.
func TestDeprecatedRollbackAnnotation(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	c.create(newDeployment("web", 2, "v1"))
	c.kubelet("web")
	c.eventually("web", "v1", func() (bool, error) { return complete(c.deployment("web")), nil })
	c.update("web", setImage("v2"))
	c.eventually("web", "v2", func() (bool, error) {
		d := c.deployment("web")
		return complete(d) && d.Annotations[revisionAnnotation] == "2", nil
	})
	c.update("web", func(d *appsv1.Deployment) { d.Annotations[rollbackToAnnotation] = "0" })
	c.eventually("web", "rolled back to v1 as revision 3", func() (bool, error) {
		d := c.deployment("web")
		_, pending := d.Annotations[rollbackToAnnotation]
		return !pending && complete(d) && d.Spec.Template.Spec.Containers[0].Image == "v1" && d.Annotations[revisionAnnotation] == "3", nil
	})
	c.eventually("web", "the DeploymentRollback event", func() (bool, error) {
		return slices.Contains(c.events("Deployment", "web"), `Normal DeploymentRollback Rolled back deployment "web" to revision 1`), nil
	})
	// Asking for a revision that does not exist only clears the request.
	c.update("web", func(d *appsv1.Deployment) { d.Annotations[rollbackToAnnotation] = "42" })
	c.eventually("web", "request cleared", func() (bool, error) {
		_, pending := c.deployment("web").Annotations[rollbackToAnnotation]
		return !pending && slices.Contains(c.events("Deployment", "web"), "Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."), nil
	})
}
