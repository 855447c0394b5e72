package statefulset

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/envtest"
)

// OrderedReady: pods are created one at a time, each only once the one
// before is Running and Ready, with their stable identity; scale-down
// deletes from the highest ordinal, one at a time.
func TestOrderedReadyScaleUpAndDown(t *testing.T) {
	c := startCluster(t, false)
	set := c.create(newSet("web", 3))
	for i := 0; i < 3; i++ {
		name := "web-" + strconv.Itoa(i)
		envtest.Eventually(t, name+" created", func() (bool, error) {
			_, ok := c.pods("web")[name]
			return ok, nil
		})
		// The next pod must not exist while this one is not ready.
		if next := fmt.Sprintf("web-%d", i+1); c.pods("web")[next].Name != "" {
			t.Fatalf("%s was created before %s was ready", next, name)
		}
		c.markReady(name)
	}
	envtest.Eventually(t, "status 3/3", func() (bool, error) {
		st := c.set("web").Status
		return st.Replicas == 3 && st.ReadyReplicas == 3 && st.AvailableReplicas == 3 &&
			st.CurrentReplicas == 3 && st.UpdatedReplicas == 3 && st.ObservedGeneration == 1, nil
	})
	st := c.set("web").Status
	if st.CurrentRevision == "" || st.CurrentRevision != st.UpdateRevision || st.CollisionCount == nil || *st.CollisionCount != 0 {
		t.Fatalf("status revisions: %+v", st)
	}
	for i, p := range []string{"web-0", "web-1", "web-2"} {
		pod := c.pods("web")[p]
		ref := metav1.GetControllerOf(&pod)
		if pod.Spec.Hostname != p || pod.Spec.Subdomain != "web-svc" ||
			pod.Labels[appsv1.StatefulSetPodNameLabel] != p || pod.Labels[appsv1.PodIndexLabel] != strconv.Itoa(i) ||
			pod.Labels[appsv1.StatefulSetRevisionLabel] != st.CurrentRevision ||
			ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" || !*ref.BlockOwnerDeletion {
			t.Fatalf("pod %s: hostname %q subdomain %q labels %v owners %+v", p, pod.Spec.Hostname, pod.Spec.Subdomain, pod.Labels, pod.OwnerReferences)
		}
	}
	envtest.Eventually(t, "create events", func() (bool, error) {
		ev := c.events("web")
		return slices.Contains(ev, "Normal SuccessfulCreate Create Pod web-0 in StatefulSet web successful") &&
			slices.Contains(ev, "Normal SuccessfulCreate Create Pod web-2 in StatefulSet web successful"), nil
	})

	// Scale down to 1 and watch the order of deletions.
	w, err := c.client.CoreV1().Pods(ns).Watch(bg, metav1.ListOptions{LabelSelector: "app=web", ResourceVersion: c.podListRV()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32p(1) })
	var deleted []string
	for len(deleted) < 2 {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type == watch.Deleted {
			deleted = append(deleted, ev.Object.(*corev1.Pod).Name)
		}
	}
	if deleted[0] != "web-2" || deleted[1] != "web-1" {
		t.Fatalf("deletion order %v, want [web-2 web-1]", deleted)
	}
	envtest.Eventually(t, "status 1/1", func() (bool, error) {
		st := c.set("web").Status
		return st.Replicas == 1 && st.ReadyReplicas == 1 && names(c.pods("web")) == "web-0", nil
	})
	envtest.Eventually(t, "delete event", func() (bool, error) {
		return slices.Contains(c.events("web"), "Normal SuccessfulDelete Delete Pod web-2 in StatefulSet web successful"), nil
	})
}

func (c *cluster) podListRV() string {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return list.ResourceVersion
}

// OrderedReady stops at an unhealthy pod: while web-0 is not ready,
// nothing else is created, and a scale-down waits too.
func TestOrderedReadyWaitsForUnhealthyPod(t *testing.T) {
	c := startCluster(t, false)
	c.create(newSet("db", 2))
	envtest.Eventually(t, "db-0", func() (bool, error) { return names(c.pods("db")) == "db-0", nil })
	c.markReady("db-0")
	envtest.Eventually(t, "db-1", func() (bool, error) { return names(c.pods("db")) == "db-0,db-1", nil })
	c.markReady("db-1")
	envtest.Eventually(t, "2 ready", func() (bool, error) { return c.set("db").Status.ReadyReplicas == 2, nil })
	// db-0 becomes unready; scaling to 3 must not create db-2.
	c.setPhase("db-0", corev1.PodRunning, false)
	envtest.Eventually(t, "1 ready", func() (bool, error) { return c.set("db").Status.ReadyReplicas == 1, nil })
	c.change("db", func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32p(3) })
	envtest.Eventually(t, "generation observed", func() (bool, error) {
		s := c.set("db")
		return s.Status.ObservedGeneration == s.Generation, nil
	})
	if got := names(c.pods("db")); got != "db-0,db-1" {
		t.Fatalf("pods %s while db-0 is unready, want db-0,db-1", got)
	}
	c.markReady("db-0")
	envtest.Eventually(t, "db-2 once db-0 is ready again", func() (bool, error) {
		return names(c.pods("db")) == "db-0,db-1,db-2", nil
	})
}

// Parallel creates and deletes all pods at once, ready or not.
func TestParallel(t *testing.T) {
	c := startCluster(t, false)
	set := newSet("par", 3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	c.create(set)
	envtest.Eventually(t, "3 pods none ready", func() (bool, error) {
		st := c.set("par").Status
		return names(c.pods("par")) == "par-0,par-1,par-2" && st.Replicas == 3 && st.ReadyReplicas == 0, nil
	})
	c.change("par", func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32p(0) })
	envtest.Eventually(t, "all deleted", func() (bool, error) {
		return len(c.pods("par")) == 0 && c.set("par").Status.Replicas == 0, nil
	})
}

// spec.ordinals.start shifts the ordinals.
func TestOrdinalsStart(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("ord")
	set := newSet("ord", 2)
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	c.create(set)
	envtest.Eventually(t, "ord-5 and ord-6", func() (bool, error) {
		return names(c.pods("ord")) == "ord-5,ord-6" && c.set("ord").Status.ReadyReplicas == 2, nil
	})
	if idx := c.pods("ord")["ord-6"].Labels[appsv1.PodIndexLabel]; idx != "6" {
		t.Fatalf("pod-index label %q, want 6", idx)
	}
}

// A failed pod is deleted and recreated with the same name.
func TestFailedPodIsRecreated(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("fail")
	c.create(newSet("fail", 1))
	envtest.Eventually(t, "ready", func() (bool, error) { return c.set("fail").Status.ReadyReplicas == 1, nil })
	old := c.pods("fail")["fail-0"]
	c.setPhase("fail-0", corev1.PodFailed, false)
	envtest.Eventually(t, "a new fail-0", func() (bool, error) {
		p, ok := c.pods("fail")["fail-0"]
		return ok && p.UID != old.UID && c.set("fail").Status.ReadyReplicas == 1, nil
	})
}

func claimTemplate(name string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
		},
	}
}

func (c *cluster) claim(name string) (*corev1.PersistentVolumeClaim, bool) {
	c.t.Helper()
	pvc, err := c.client.CoreV1().PersistentVolumeClaims(ns).Get(bg, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return pvc, true
}

func ownedBy(obj metav1.Object, uid types.UID) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// Claims are made from volumeClaimTemplates before their pods and mounted;
// retention policy Retain leaves them alone.
func TestClaimsRetainedByDefault(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("vol")
	set := newSet("vol", 2)
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data")}
	c.create(set)
	envtest.Eventually(t, "2 ready", func() (bool, error) { return c.set("vol").Status.ReadyReplicas == 2, nil })
	for i := 0; i < 2; i++ {
		claim := fmt.Sprintf("data-vol-%d", i)
		pvc, ok := c.claim(claim)
		if !ok {
			t.Fatalf("claim %s missing", claim)
		}
		if pvc.Labels["app"] != "vol" || len(pvc.OwnerReferences) != 0 {
			t.Fatalf("claim %s: labels %v owners %+v", claim, pvc.Labels, pvc.OwnerReferences)
		}
		pod := c.pods("vol")[fmt.Sprintf("vol-%d", i)]
		var found bool
		for _, v := range pod.Spec.Volumes {
			found = found || (v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim)
		}
		if !found {
			t.Fatalf("pod %s does not mount %s: %+v", pod.Name, claim, pod.Spec.Volumes)
		}
	}
	envtest.Eventually(t, "claim event", func() (bool, error) {
		return slices.Contains(c.events("vol"), "Normal SuccessfulCreate Create Claim data-vol-0 Pod vol-0 in StatefulSet vol success"), nil
	})
	c.change("vol", func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32p(1) })
	envtest.Eventually(t, "scaled to 1", func() (bool, error) { return names(c.pods("vol")) == "vol-0", nil })
	if _, ok := c.claim("data-vol-1"); !ok {
		t.Fatal("Retain policy: data-vol-1 was deleted on scale-down")
	}
}

// whenScaled=Delete: the claim of a scaled-away pod is owned by the pod and
// collected with it; whenDeleted=Delete: the set owns the claims of its
// running pods.
func TestClaimRetentionDelete(t *testing.T) {
	c := startCluster(t, true)
	c.kubelet("ret")
	set := newSet("ret", 2)
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data")}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
	set = c.create(set)
	envtest.Eventually(t, "2 ready", func() (bool, error) { return c.set("ret").Status.ReadyReplicas == 2, nil })
	envtest.Eventually(t, "claims owned by the set", func() (bool, error) {
		a, ok1 := c.claim("data-ret-0")
		b, ok2 := c.claim("data-ret-1")
		return ok1 && ok2 && ownedBy(a, set.UID) && ownedBy(b, set.UID), nil
	})
	pvc, _ := c.claim("data-ret-0")
	if ref := metav1.GetControllerOf(pvc); ref == nil || ref.Kind != "StatefulSet" || ref.UID != set.UID {
		t.Fatalf("claim owner %+v, want the StatefulSet as controller", pvc.OwnerReferences)
	}
	c.change("ret", func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32p(1) })
	envtest.Eventually(t, "data-ret-1 collected with ret-1", func() (bool, error) {
		_, ok := c.claim("data-ret-1")
		return !ok && names(c.pods("ret")) == "ret-0", nil
	})
	if _, ok := c.claim("data-ret-0"); !ok {
		t.Fatal("data-ret-0 of a running pod was deleted")
	}
	// Deleting the set deletes the remaining claim (and pod) through the
	// garbage collector.
	if err := c.client.AppsV1().StatefulSets(ns).Delete(bg, "ret", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "data-ret-0 collected with the set", func() (bool, error) {
		_, ok := c.claim("data-ret-0")
		return !ok, nil
	})
}

// image is the pod's first image, "" for a pod that does not exist.
func (c *cluster) image(pod corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	return pod.Spec.Containers[0].Image
}

// RollingUpdate with a partition updates only the ordinals at or above it,
// highest first; lowering the partition finishes the rollout and the
// update revision becomes current.
func TestRollingUpdateWithPartition(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("roll")
	set := newSet("roll", 3)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: int32p(2)},
	}
	c.create(set)
	envtest.Eventually(t, "3 ready", func() (bool, error) { return c.set("roll").Status.ReadyReplicas == 3, nil })
	rev1 := c.set("roll").Status.CurrentRevision
	c.change("roll", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	envtest.Eventually(t, "roll-2 updated", func() (bool, error) {
		st := c.set("roll").Status
		p := c.pods("roll")
		return c.image(p["roll-2"]) == "busybox:2" && st.UpdatedReplicas == 1 && st.CurrentReplicas == 2 && st.ReadyReplicas == 3, nil
	})
	st := c.set("roll").Status
	if st.CurrentRevision != rev1 || st.UpdateRevision == rev1 {
		t.Fatalf("revisions current %q update %q, want current %q and a new update revision", st.CurrentRevision, st.UpdateRevision, rev1)
	}
	p := c.pods("roll")
	if c.image(p["roll-0"]) != "busybox:1" || c.image(p["roll-1"]) != "busybox:1" ||
		p["roll-0"].Labels[appsv1.StatefulSetRevisionLabel] != rev1 || p["roll-2"].Labels[appsv1.StatefulSetRevisionLabel] != st.UpdateRevision {
		t.Fatalf("pods below the partition changed: %v %v", p["roll-0"].Labels, p["roll-1"].Labels)
	}
	c.change("roll", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = int32p(0) })
	envtest.Eventually(t, "rollout complete", func() (bool, error) {
		st := c.set("roll").Status
		p := c.pods("roll")
		return c.image(p["roll-0"]) == "busybox:2" && c.image(p["roll-1"]) == "busybox:2" &&
			st.UpdatedReplicas == 3 && st.CurrentReplicas == 3 && st.ReadyReplicas == 3 && st.CurrentRevision == st.UpdateRevision, nil
	})
}

// OnDelete never replaces pods by itself; a pod someone deletes comes back
// at the update revision.
func TestOnDelete(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("ond")
	set := newSet("ond", 2)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	c.create(set)
	envtest.Eventually(t, "2 ready", func() (bool, error) { return c.set("ond").Status.ReadyReplicas == 2, nil })
	c.change("ond", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	envtest.Eventually(t, "new update revision observed", func() (bool, error) {
		s := c.set("ond")
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != s.Status.CurrentRevision &&
			s.Status.UpdatedReplicas == 0 && s.Status.CurrentReplicas == 2, nil
	})
	for _, p := range c.pods("ond") {
		if c.image(p) != "busybox:1" {
			t.Fatalf("OnDelete replaced %s by itself", p.Name)
		}
	}
	if err := c.client.CoreV1().Pods(ns).Delete(bg, "ond-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "ond-1 recreated at the update revision", func() (bool, error) {
		p := c.pods("ond")
		st := c.set("ond").Status
		return c.image(p["ond-1"]) == "busybox:2" && c.image(p["ond-0"]) == "busybox:1" &&
			st.UpdatedReplicas == 1 && st.CurrentReplicas == 1 && st.ReadyReplicas == 2, nil
	})
}

// Each template gets a ControllerRevision; kubectl rollout history lists
// them and kubectl rollout undo goes back to one (renumbered, not copied);
// kubectl rollout status follows status; old revisions beyond
// revisionHistoryLimit are deleted.
func TestRevisionsWithKubectlRollout(t *testing.T) {
	c := startCluster(t, false)
	c.kubelet("hist")
	set := newSet("hist", 2)
	set.Spec.RevisionHistoryLimit = int32p(1)
	set = c.create(set)
	envtest.Eventually(t, "2 ready", func() (bool, error) { return c.set("hist").Status.ReadyReplicas == 2, nil })
	rolloutComplete := func(image string) func() (bool, error) {
		return func() (bool, error) {
			s := c.set("hist")
			p := c.pods("hist")
			return s.Status.ObservedGeneration == s.Generation && s.Status.CurrentRevision == s.Status.UpdateRevision &&
				s.Status.UpdatedReplicas == 2 && s.Status.ReadyReplicas == 2 &&
				c.image(p["hist-0"]) == image && c.image(p["hist-1"]) == image, nil
		}
	}
	rev1 := c.set("hist").Status.CurrentRevision
	c.change("hist", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	envtest.Eventually(t, "rolled out to busybox:2", rolloutComplete("busybox:2"))
	rev2 := c.set("hist").Status.CurrentRevision
	if rev2 == rev1 {
		t.Fatal("a new template did not get a new revision")
	}
	revs := c.revisions(set)
	if len(revs) != 2 || revs[0].Name != rev1 || revs[0].Revision != 1 || revs[1].Name != rev2 || revs[1].Revision != 2 {
		t.Fatalf("revisions %v", revisionSummary(revs))
	}
	if _, err := applyRevision(set, &revs[0]); err != nil {
		t.Fatal(err)
	}

	// kubectl rollout status.
	viewer, err := polymorphichelpers.StatusViewerFor(schema.GroupKind{Group: "apps", Kind: "StatefulSet"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.set("hist"))
	if err != nil {
		t.Fatal(err)
	}
	msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
	if err != nil || !done {
		t.Fatalf("kubectl rollout status: %q done=%v err=%v", msg, done, err)
	}

	// kubectl rollout history.
	hv, err := polymorphichelpers.HistoryViewerFor(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, c.client)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := hv.GetHistory(ns, "hist")
	if err != nil || len(hist) != 2 || hist[1] == nil || hist[2] == nil {
		t.Fatalf("kubectl rollout history: %v, %v", hist, err)
	}

	// kubectl rollout undo --to-revision=1.
	rb, err := polymorphichelpers.RollbackerFor(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, c.client)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Rollback(c.set("hist"), nil, 1, cmdutil.DryRunNone); err != nil {
		t.Fatalf("kubectl rollout undo: %v", err)
	}
	envtest.Eventually(t, "rolled back to busybox:1", rolloutComplete("busybox:1"))
	if got := c.set("hist").Status.CurrentRevision; got != rev1 {
		t.Fatalf("after undo the current revision is %q, want the old %q reused", got, rev1)
	}
	envtest.Eventually(t, "revision 1 renumbered to 3", func() (bool, error) {
		revs := c.revisions(set)
		return len(revs) == 2 && revs[1].Name == rev1 && revs[1].Revision == 3 && revs[0].Name == rev2, nil
	})

	// A third template: with revisionHistoryLimit 1 only one revision
	// beyond the live one is kept.
	c.change("hist", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:3" })
	envtest.Eventually(t, "rolled out to busybox:3", rolloutComplete("busybox:3"))
	envtest.Eventually(t, "history trimmed", func() (bool, error) {
		revs := c.revisions(set)
		return len(revs) == 2 && revs[1].Revision == 4 && revs[0].Name == rev1, nil
	})
}

func revisionSummary(revs []appsv1.ControllerRevision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, fmt.Sprintf("%s=%d", r.Name, r.Revision))
	}
	return out
}

// maxUnavailable lets a Parallel set replace several pods at once, never
// more than that many unavailable.
func TestMaxUnavailableParallel(t *testing.T) {
	c := startCluster(t, false)
	set := newSet("mu", 4)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	two := intstr.FromInt32(2)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: int32p(0), MaxUnavailable: &two},
	}
	c.create(set)
	envtest.Eventually(t, "4 pods", func() (bool, error) { return len(c.pods("mu")) == 4, nil })
	for name := range c.pods("mu") {
		c.markReady(name)
	}
	envtest.Eventually(t, "4 ready", func() (bool, error) { return c.set("mu").Status.AvailableReplicas == 4, nil })
	c.change("mu", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	envtest.Eventually(t, "mu-3 and mu-2 replaced", func() (bool, error) {
		p := c.pods("mu")
		return c.image(p["mu-3"]) == "busybox:2" && c.image(p["mu-2"]) == "busybox:2" && c.set("mu").Status.UpdatedReplicas == 2, nil
	})
	p := c.pods("mu")
	if c.image(p["mu-0"]) != "busybox:1" || c.image(p["mu-1"]) != "busybox:1" {
		t.Fatalf("more than maxUnavailable=2 pods replaced while the new ones are not ready")
	}
	c.markReady("mu-2")
	c.markReady("mu-3")
	envtest.Eventually(t, "mu-1 and mu-0 replaced", func() (bool, error) {
		p := c.pods("mu")
		return c.image(p["mu-0"]) == "busybox:2" && c.image(p["mu-1"]) == "busybox:2", nil
	})
}

// With minReadySeconds, OrderedReady waits until a ready pod has been
// ready that long (on the controller's clock) before the next one, and
// availableReplicas follows.
func TestMinReadySeconds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := startClusterWithClock(t, false, clk)
	set := newSet("slow", 2)
	set.Spec.MinReadySeconds = 30
	c.create(set)
	envtest.Eventually(t, "slow-0", func() (bool, error) { return names(c.pods("slow")) == "slow-0", nil })
	if err := c.trySetPhaseSince("slow-0", corev1.PodRunning, true, clk.Now()); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "ready but not available", func() (bool, error) {
		st := c.set("slow").Status
		return st.ReadyReplicas == 1 && st.AvailableReplicas == 0, nil
	})
	if got := names(c.pods("slow")); got != "slow-0" {
		t.Fatalf("pods %s before slow-0 was available, want slow-0 only", got)
	}
	clk.Step(31 * time.Second)
	envtest.Eventually(t, "slow-0 available and slow-1 created", func() (bool, error) {
		return c.set("slow").Status.AvailableReplicas == 1 && names(c.pods("slow")) == "slow-0,slow-1", nil
	})
}

// An orphan pod with the set's labels and a member's name is adopted, not
// recreated; a matching orphan with another name is left alone.
func TestAdoptsOrphanPods(t *testing.T) {
	c := startCluster(t, false)
	orphan := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "adopt"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
		}
	}
	for _, name := range []string{"adopt-0", "stranger"} {
		if _, err := c.client.CoreV1().Pods(ns).Create(bg, orphan(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := c.pods("adopt")["adopt-0"]
	set := c.create(newSet("adopt", 1))
	envtest.Eventually(t, "adopt-0 adopted", func() (bool, error) {
		p := c.pods("adopt")["adopt-0"]
		ref := metav1.GetControllerOf(&p)
		return ref != nil && ref.UID == set.UID && c.set("adopt").Status.Replicas == 1, nil
	})
	if got := c.pods("adopt")["adopt-0"]; got.UID != before.UID {
		t.Fatal("adopt-0 was recreated instead of adopted")
	}
	if p := c.pods("adopt")["stranger"]; len(p.OwnerReferences) != 0 {
		t.Fatalf("adopted a pod whose name is not a member's: %+v", p.OwnerReferences)
	}
}
