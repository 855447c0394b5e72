package deployment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/envtest"
)

func TestDeploymentCreatesReplicaSetAndPods(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	d := c.create(newDeployment("web", 5, "nginx:1"))
	if d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" {
		t.Fatalf("apiserver defaults: %+v", d.Spec.Strategy)
	}
	hash := templateHash(&d.Spec.Template, nil)
	rsName := "web-" + hash
	envtest.Eventually(t, "the ReplicaSet and 5 pods", func() (bool, error) {
		rss := c.replicaSets("web")
		return len(rss) == 1 && rss[0].Status.Replicas == 5 && len(c.pods("web")) == 5, nil
	})
	rs := c.replicaSets("web")[0]
	if rs.Name != rsName {
		t.Fatalf("ReplicaSet %q, want %q", rs.Name, rsName)
	}
	if rs.Labels[podTemplateHashLabel] != hash || rs.Spec.Selector.MatchLabels[podTemplateHashLabel] != hash ||
		rs.Spec.Template.Labels[podTemplateHashLabel] != hash || rs.Spec.Template.Labels["app"] != "web" {
		t.Fatalf("labels %v selector %v template %v", rs.Labels, rs.Spec.Selector, rs.Spec.Template.Labels)
	}
	want := map[string]string{revisionAnnotation: "1", desiredReplicasAnnotation: "5", maxReplicasAnnotation: "7"}
	for k, v := range want {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if ref := metav1.GetControllerOf(&rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" || !*ref.BlockOwnerDeletion {
		t.Fatalf("ownerReferences %+v", rs.OwnerReferences)
	}
	for _, p := range c.pods("web") {
		if p.Labels[podTemplateHashLabel] != hash || metav1.GetControllerOf(&p).Name != rsName {
			t.Fatalf("pod %s labels %v owners %v", p.Name, p.Labels, p.OwnerReferences)
		}
	}
	envtest.Eventually(t, "revision annotation and MinimumReplicasUnavailable", func() (bool, error) {
		d := c.deployment("web")
		a := condition(d, appsv1.DeploymentAvailable)
		return d.Annotations[revisionAnnotation] == "1" && a.Status == corev1.ConditionFalse && a.Reason == reasonMinimumUnavailable &&
			d.Status.Replicas == 5 && d.Status.UnavailableReplicas == 5, nil
	})
	if p := condition(c.deployment("web"), appsv1.DeploymentProgressing); p.Status != corev1.ConditionTrue ||
		(p.Reason != reasonNewRSCreated && p.Reason != reasonRSUpdated) {
		t.Fatalf("Progressing %+v", p)
	}

	c.readyAll("web")
	envtest.Eventually(t, "a complete rollout", func() (bool, error) { return complete(c.deployment("web")), nil })
	d = c.deployment("web")
	st := d.Status
	if st.Replicas != 5 || st.UpdatedReplicas != 5 || st.ReadyReplicas != 5 || st.AvailableReplicas != 5 || st.UnavailableReplicas != 0 ||
		st.ObservedGeneration != d.Generation || st.TerminatingReplicas == nil || *st.TerminatingReplicas != 0 {
		t.Fatalf("status %+v", st)
	}
	a, p := condition(d, appsv1.DeploymentAvailable), condition(d, appsv1.DeploymentProgressing)
	if a.Status != corev1.ConditionTrue || a.Reason != reasonMinimumAvailable || a.Message != "Deployment has minimum availability." {
		t.Fatalf("Available %+v", a)
	}
	if p.Status != corev1.ConditionTrue || p.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName) {
		t.Fatalf("Progressing %+v", p)
	}
	envtest.Eventually(t, "the ScalingReplicaSet event", func() (bool, error) {
		return slices.Contains(c.events("Deployment", "web"), "Normal ScalingReplicaSet Scaled up replica set "+rsName+" from 0 to 5"), nil
	})
}

// A template change rolls out without ever going above replicas+maxSurge
// pods (as ReplicaSet sizes) or below replicas-maxUnavailable ready pods.
// The test's kubelet readies one pod at a time and checks both at each
// step.
func TestRollingUpdateInvariants(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable string
		maxTotal, minReady int32
	}{
		{5, "1", "1", 6, 4},
		{10, "30%", "20%", 13, 8},
		{4, "0", "1", 4, 3},
		{3, "1", "0", 4, 3},
		{5, "25%", "25%", 7, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s_%s", tt.replicas, tt.surge, tt.unavailable), func(t *testing.T) {
			c := startCluster(t, clock.RealClock{})
			c.create(withRolling(newDeployment("web", tt.replicas, "v1"), tt.surge, tt.unavailable))
			envtest.Eventually(t, "v1 rolled out", func() (bool, error) {
				c.readyAll("web")
				return complete(c.deployment("web")), nil
			})
			oldRS := c.replicaSets("web")[0].Name
			c.update("web", setImage("v2"))
			steps := 0
			c.eventually("web", "v2 rolled out", func() (bool, error) {
				var total int32
				rss := c.replicaSets("web")
				for _, rs := range rss {
					total += *rs.Spec.Replicas
				}
				if total > tt.maxTotal {
					t.Fatalf("ReplicaSets sized %d in all, above replicas+maxSurge = %d", total, tt.maxTotal)
				}
				ready := int32(0)
				var notReady []corev1.Pod
				for _, p := range c.pods("web") {
					if controller.PodReady(&p) {
						ready++
					} else {
						notReady = append(notReady, p)
					}
				}
				if ready < tt.minReady {
					t.Fatalf("%d ready pods, below replicas-maxUnavailable = %d", ready, tt.minReady)
				}
				if len(notReady) > 0 {
					c.kubeletReady(notReady[0], time.Now())
					steps++
				}
				d := c.deployment("web")
				return complete(d) && len(rss) == 2 && total == tt.replicas && d.Spec.Template.Spec.Containers[0].Image == "v2" &&
					int32(len(c.pods("web"))) == tt.replicas, nil
			})
			if steps < int(tt.replicas) {
				t.Fatalf("readied %d pods, want at least %d", steps, tt.replicas)
			}
			d := c.deployment("web")
			if d.Annotations[revisionAnnotation] != "2" {
				t.Fatalf("deployment revision %q, want 2", d.Annotations[revisionAnnotation])
			}
			envtest.Eventually(t, "the last scale-down event", func() (bool, error) {
				for _, e := range c.events("Deployment", "web") {
					// After ten alike events the recorder prefixes the
					// message with "(combined from similar events): ".
					if strings.HasPrefix(e, "Normal ScalingReplicaSet ") && strings.Contains(e, "Scaled down replica set "+oldRS+" from ") && strings.HasSuffix(e, " to 0") {
						return true, nil
					}
				}
				return false, nil
			})
		})
	}
}

func TestRecreate(t *testing.T) {
	c := startCluster(t, clock.RealClock{})
	d := newDeployment("db", 3, "v1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	// Pods on a node take a kubelet to delete. (pods/binding would be the
	// scheduler's way, but this apiserver still refuses it: its update
	// validation forbids the spec.nodeName change.)
	d.Spec.Template.Spec.NodeName = "node-1"
	c.create(d)
	envtest.Eventually(t, "v1 rolled out", func() (bool, error) {
		c.readyAll("db")
		return complete(c.deployment("db")), nil
	})
	v1 := c.replicaSets("db")[0].Name
	c.update("db", setImage("v2"))
	// The old pods are terminating: nothing new may start until they are
	// gone.
	envtest.Eventually(t, "old pods terminating", func() (bool, error) {
		ps := c.pods("db")
		terminating := 0
		for _, p := range ps {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		return terminating == 3, nil
	})
	if rss := c.replicaSets("db"); len(rss) != 1 || *rss[0].Spec.Replicas != 0 {
		t.Fatalf("a new ReplicaSet while old pods terminate: %d ReplicaSets", len(rss))
	}
	c.eventually("db", "Available=False while scaled to zero", func() (bool, error) {
		a := condition(c.deployment("db"), appsv1.DeploymentAvailable)
		return a.Status == corev1.ConditionFalse && a.Reason == reasonMinimumUnavailable, nil
	})
	// The kubelet finishes two of them: still nothing new.
	ps := c.pods("db")
	zero := int64(0)
	for _, p := range ps[:2] {
		if err := c.client.CoreV1().Pods("default").Delete(bg, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	envtest.Eventually(t, "two pods gone", func() (bool, error) { return len(c.pods("db")) == 1, nil })
	if rss := c.replicaSets("db"); len(rss) != 1 {
		t.Fatalf("new ReplicaSet created while an old pod still runs")
	}
	if err := c.client.CoreV1().Pods("default").Delete(bg, ps[2].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "v2 rolled out", func() (bool, error) {
		c.readyAll("db")
		rss := c.replicaSets("db")
		return complete(c.deployment("db")) && len(rss) == 2 && len(c.pods("db")) == 3, nil
	})
	v2 := ""
	for _, rs := range c.replicaSets("db") {
		if rs.Name != v1 {
			v2 = rs.Name
		}
	}
	ev := c.events("Deployment", "db")
	for _, want := range []string{
		"Normal ScalingReplicaSet Scaled down replica set " + v1 + " from 3 to 0",
		"Normal ScalingReplicaSet Scaled up replica set " + v2 + " from 0 to 3",
	} {
		if !slices.Contains(ev, want) {
			t.Errorf("missing event %q in %q", want, ev)
		}
	}
}
