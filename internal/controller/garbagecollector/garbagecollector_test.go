package garbagecollector

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
)

const holdFinalizer = "example.com/hold"

var labels = map[string]string{"app": "web"}

// workloadChain creates a Deployment, a ReplicaSet it owns and a Pod the
// ReplicaSet owns, by hand (no deployment or replicaset controller runs).
// The pod carries podFinalizers.
func workloadChain(t *testing.T, client kubernetes.Interface, ns string, block bool, podFinalizers ...string) (*appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	dep, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllerRef := ownerRef("apps/v1", "Deployment", dep, block)
	controllerRef.Controller = ptr(true)
	rs, err := client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: []metav1.OwnerReference{controllerRef}},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podRef := ownerRef("apps/v1", "ReplicaSet", rs, block)
	podRef.Controller = ptr(true)
	pod, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Labels: labels, OwnerReferences: []metav1.OwnerReference{podRef}, Finalizers: podFinalizers},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep, rs, pod
}

// TestPropagation deletes owners with each propagation policy and checks
// what becomes of their dependents.
func TestPropagation(t *testing.T) {
	e := startGC(t)
	ctx := context.Background()
	createNamespace(t, e.client, "gc")
	cms := e.client.CoreV1().ConfigMaps("gc")

	t.Run("Background", func(t *testing.T) {
		owner := createConfigMap(t, e.client, "gc", "bg-owner")
		createConfigMap(t, e.client, "gc", "bg-a", ownerRef("v1", "ConfigMap", owner, false))
		createConfigMap(t, e.client, "gc", "bg-b", ownerRef("v1", "ConfigMap", owner, true))
		if err := cms.Delete(ctx, "bg-owner", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"bg-a", "bg-b"} {
			envtest.Eventually(t, "dependent "+name+" collected", gone(func() error { _, err := cms.Get(ctx, name, metav1.GetOptions{}); return err }))
		}
	})

	t.Run("BackgroundChain", func(t *testing.T) {
		createNamespace(t, e.client, "gc-chain")
		dep, _, _ := workloadChain(t, e.client, "gc-chain", false)
		// No propagation policy: Background is the default for Deployments.
		if err := e.client.AppsV1().Deployments("gc-chain").Delete(ctx, dep.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "replicaset collected", gone(func() error {
			_, err := e.client.AppsV1().ReplicaSets("gc-chain").Get(ctx, "web-1", metav1.GetOptions{})
			return err
		}))
		envtest.Eventually(t, "pod collected", gone(func() error {
			_, err := e.client.CoreV1().Pods("gc-chain").Get(ctx, "web-1-a", metav1.GetOptions{})
			return err
		}))
	})

	t.Run("ClusterScopedOwner", func(t *testing.T) {
		role, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		createConfigMap(t, e.client, "gc", "owned-by-clusterrole", ownerRef("rbac.authorization.k8s.io/v1", "ClusterRole", role, false))
		if err := e.client.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "dependent of a cluster-scoped owner collected", gone(func() error {
			_, err := cms.Get(ctx, "owned-by-clusterrole", metav1.GetOptions{})
			return err
		}))
	})

	t.Run("Foreground", func(t *testing.T) {
		createNamespace(t, e.client, "gc-fg")
		deps := e.client.AppsV1().Deployments("gc-fg")
		rss := e.client.AppsV1().ReplicaSets("gc-fg")
		pods := e.client.CoreV1().Pods("gc-fg")
		// The pod holds on with a finalizer, so the chain must wait for it.
		dep, _, _ := workloadChain(t, e.client, "gc-fg", true, holdFinalizer)
		// A dependent that does not block its owner is deleted, but not waited for.
		createConfigMap(t, e.client, "gc-fg", "loose", ownerRef("apps/v1", "Deployment", dep, false))
		e.waitInGraph(t, dep.UID)
		if err := deps.Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "pod marked for deletion", func() (bool, error) {
			pod, err := pods.Get(ctx, "web-1-a", metav1.GetOptions{})
			return err == nil && pod.DeletionTimestamp != nil, err
		})
		envtest.Eventually(t, "loose dependent collected", gone(func() error {
			_, err := e.client.CoreV1().ConfigMaps("gc-fg").Get(ctx, "loose", metav1.GetOptions{})
			return err
		}))
		// While the pod stays, the replicaset (deleted in foreground, as it
		// has dependents) and the deployment stay with the finalizer.
		rs, err := rss.Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("replicaset gone while its pod remains: %v", err)
		}
		if rs.DeletionTimestamp == nil || !hasFinalizer(rs, metav1.FinalizerDeleteDependents) {
			t.Errorf("replicaset: deletionTimestamp %v, finalizers %v; want it deleted in foreground", rs.DeletionTimestamp, rs.Finalizers)
		}
		d, err := deps.Get(ctx, dep.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("deployment gone while a blocking dependent remains: %v", err)
		}
		if d.DeletionTimestamp == nil || !hasFinalizer(d, metav1.FinalizerDeleteDependents) {
			t.Errorf("deployment: deletionTimestamp %v, finalizers %v", d.DeletionTimestamp, d.Finalizers)
		}
		// Let the pod go: the chain finishes.
		if _, err := pods.Patch(ctx, "web-1-a", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "pod gone", gone(func() error { _, err := pods.Get(ctx, "web-1-a", metav1.GetOptions{}); return err }))
		envtest.Eventually(t, "replicaset gone", gone(func() error { _, err := rss.Get(ctx, "web-1", metav1.GetOptions{}); return err }))
		envtest.Eventually(t, "deployment gone", gone(func() error { _, err := deps.Get(ctx, dep.Name, metav1.GetOptions{}); return err }))
	})

	t.Run("Orphan", func(t *testing.T) {
		owner := createConfigMap(t, e.client, "gc", "orphan-owner")
		other := createConfigMap(t, e.client, "gc", "orphan-other-owner")
		createConfigMap(t, e.client, "gc", "orphan-a", ownerRef("v1", "ConfigMap", owner, true))
		createConfigMap(t, e.client, "gc", "orphan-b", ownerRef("v1", "ConfigMap", owner, false), ownerRef("v1", "ConfigMap", other, false))
		e.waitInGraph(t, owner.UID)
		if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationOrphan)}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "owner gone", gone(func() error { _, err := cms.Get(ctx, owner.Name, metav1.GetOptions{}); return err }))
		want := map[string][]types.UID{"orphan-a": nil, "orphan-b": {other.UID}}
		for name, owners := range want {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("orphaned dependent %s: %v", name, err)
			}
			if got := refUIDs(cm.OwnerReferences); len(got) != len(owners) || (len(owners) == 1 && got[0] != owners[0]) {
				t.Errorf("%s owners = %v, want %v", name, got, owners)
			}
		}
	})
}

// TestOwnerIdentity checks that owners are matched by uid, that absent
// owners are dropped when others remain, and that a cross-namespace owner is
// reported and treated as absent.
func TestOwnerIdentity(t *testing.T) {
	e := startGC(t)
	ctx := context.Background()
	createNamespace(t, e.client, "id")
	createNamespace(t, e.client, "id-other")
	cms := e.client.CoreV1().ConfigMaps("id")

	t.Run("UIDMismatch", func(t *testing.T) {
		old := createConfigMap(t, e.client, "id", "reused")
		if err := cms.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		replacement := createConfigMap(t, e.client, "id", "reused")
		createConfigMap(t, e.client, "id", "child-of-old", ownerRef("v1", "ConfigMap", old, false))
		envtest.Eventually(t, "dependent of the old owner collected", gone(func() error {
			_, err := cms.Get(ctx, "child-of-old", metav1.GetOptions{})
			return err
		}))
		if cm, err := cms.Get(ctx, "reused", metav1.GetOptions{}); err != nil || cm.UID != replacement.UID {
			t.Fatalf("the new owner with the old name was touched: %v", err)
		}
	})

	t.Run("DanglingRefRemoved", func(t *testing.T) {
		alive := createConfigMap(t, e.client, "id", "alive")
		dead := createConfigMap(t, e.client, "id", "dead")
		if err := cms.Delete(ctx, dead.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		createConfigMap(t, e.client, "id", "two-owners", ownerRef("v1", "ConfigMap", alive, false), ownerRef("v1", "ConfigMap", dead, false))
		envtest.Eventually(t, "reference to the absent owner removed", func() (bool, error) {
			cm, err := cms.Get(ctx, "two-owners", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got := refUIDs(cm.OwnerReferences)
			return len(got) == 1 && got[0] == alive.UID, nil
		})
	})

	t.Run("InvalidNamespace", func(t *testing.T) {
		owner := createConfigMap(t, e.client, "id-other", "elsewhere")
		e.waitInGraph(t, owner.UID)
		child := createConfigMap(t, e.client, "id", "cross-namespace", ownerRef("v1", "ConfigMap", owner, false))
		envtest.Eventually(t, "dependent with a cross-namespace owner collected", gone(func() error {
			_, err := cms.Get(ctx, child.Name, metav1.GetOptions{})
			return err
		}))
		envtest.Eventually(t, "OwnerRefInvalidNamespace event", func() (bool, error) {
			events, err := e.client.CoreV1().Events("id").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, ev := range events.Items {
				if ev.Reason == "OwnerRefInvalidNamespace" && ev.InvolvedObject.UID == child.UID && ev.Type == corev1.EventTypeWarning &&
					ev.Source.Component == "garbage-collector-controller" {
					return true, nil
				}
			}
			return false, nil
		})
		if _, err := e.client.CoreV1().ConfigMaps("id-other").Get(ctx, owner.Name, metav1.GetOptions{}); err != nil {
			t.Fatalf("owner in the other namespace: %v", err)
		}
	})

	t.Run("NeverExistingOwner", func(t *testing.T) {
		ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "ghost", UID: "00000000-0000-0000-0000-000000000001"}
		createConfigMap(t, e.client, "id", "child-of-ghost", ghost)
		envtest.Eventually(t, "dependent of an owner that never existed collected", gone(func() error {
			_, err := cms.Get(ctx, "child-of-ghost", metav1.GetOptions{})
			return err
		}))
		envtest.Eventually(t, "virtual owner dropped from the graph", func() (bool, error) { return !e.gc.GraphHasUID(ghost.UID), nil })
	})

	t.Run("OwnerlessUntouched", func(t *testing.T) {
		createConfigMap(t, e.client, "id", "standalone")
		owner := createConfigMap(t, e.client, "id", "keeper")
		child := createConfigMap(t, e.client, "id", "kept", ownerRef("v1", "ConfigMap", owner, true))
		e.waitInGraph(t, child.UID)
		// Delete something else and wait for it to be processed; nothing
		// with a live owner (or none) may go.
		trigger := createConfigMap(t, e.client, "id", "trigger")
		createConfigMap(t, e.client, "id", "trigger-child", ownerRef("v1", "ConfigMap", trigger, false))
		if err := cms.Delete(ctx, trigger.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "trigger's dependent collected", gone(func() error { _, err := cms.Get(ctx, "trigger-child", metav1.GetOptions{}); return err }))
		for _, name := range []string{"standalone", "keeper", "kept"} {
			if _, err := cms.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Errorf("%s was deleted", name)
			}
		}
	})
}
