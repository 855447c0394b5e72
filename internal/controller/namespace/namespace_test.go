package namespace

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
)

const holdFinalizer = "example.com/hold"

var unhold = []byte(`{"metadata":{"finalizers":null}}`)

// fill creates objects of several resources in ns.
func fill(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}
	creates := []func() error{
		func() error {
			_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Labels: labels}, Spec: podSpec}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role"}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range creates {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
}

// emptyExcept is true when ns holds nothing but the objects named in keep
// (by "resource/name").
func emptyExcept(ctx context.Context, cctxDiscovery discovery.DiscoveryInterface, list func(schema.GroupVersionResource) ([]string, error), keep ...string) (bool, error) {
	lists, err := discovery.ServerPreferredNamespacedResources(cctxDiscovery)
	if err != nil {
		return false, err
	}
	gvrs, err := discovery.GroupVersionResources(discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists))
	if err != nil {
		return false, err
	}
	allowed := map[string]bool{}
	for _, k := range keep {
		allowed[k] = true
	}
	for gvr := range gvrs {
		names, err := list(gvr)
		if err != nil {
			return false, err
		}
		for _, name := range names {
			if !allowed[gvr.Resource+"/"+name] {
				return false, fmt.Errorf("%s/%s remains", gvr.Resource, name)
			}
		}
	}
	return true, nil
}

// TestNamespaceDeletion deletes namespaces full of objects: the content goes,
// the conditions say what holds the namespace back, and the namespace goes
// once the last object does.
func TestNamespaceDeletion(t *testing.T) {
	cctx := newContext(t)
	c := New(cctx)
	run(t, cctx, c)
	client := cctx.Client
	ctx := context.Background()
	namespaces := client.CoreV1().Namespaces()
	listNames := func(ns string) func(schema.GroupVersionResource) ([]string, error) {
		return func(gvr schema.GroupVersionResource) ([]string, error) {
			list, err := cctx.Metadata.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, item := range list.Items {
				names = append(names, item.Name)
			}
			return names, nil
		}
	}

	t.Run("ContentHeldByFinalizer", func(t *testing.T) {
		t.Parallel()
		const ns = "doomed"
		if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fill(t, client, ns)
		held, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{holdFinalizer}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := namespaces.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "conditions report the held configmap", func() (bool, error) {
			got, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return got.Status.Phase == corev1.NamespaceTerminating &&
				conditionIs(got, corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances") &&
				conditionIs(got, corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances") &&
				conditionIs(got, corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization") &&
				conditionIs(got, corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered") &&
				conditionIs(got, corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionFalse, "ParsedGroupVersions", "All legacy kube types successfully parsed"), nil
		})
		envtest.Eventually(t, "everything but the held configmap deleted", func() (bool, error) {
			return emptyExcept(ctx, client.Discovery(), listNames(ns), "configmaps/held")
		})
		got, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
		if err != nil || len(got.Spec.Finalizers) != 1 || got.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
			t.Fatalf("namespace while content remains: %v, finalizers %v", err, got.Spec.Finalizers)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, held.Name, types.MergePatchType, unhold, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "namespace deleted", gone(func() error { _, err := namespaces.Get(ctx, ns, metav1.GetOptions{}); return err }))
	})

	t.Run("PodsFirst", func(t *testing.T) {
		t.Parallel()
		const ns = "pods-first"
		if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{holdFinalizer}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-pods"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := namespaces.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "conditions report the held pod", func() (bool, error) {
			got, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
			return err == nil && conditionIs(got, corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain",
				"Some resources are remaining: pods. has 1 resource instances"), err
		})
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil || pod.DeletionTimestamp == nil {
			t.Fatalf("held pod: %v, deletionTimestamp %v", err, pod.DeletionTimestamp)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "after-pods", metav1.GetOptions{}); err != nil {
			t.Fatalf("configmap deleted while a pod remains: %v", err)
		}
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, "held", types.MergePatchType, unhold, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "namespace deleted", gone(func() error { _, err := namespaces.Get(ctx, ns, metav1.GetOptions{}); return err }))
	})

	t.Run("ActiveUntouched", func(t *testing.T) {
		t.Parallel()
		const ns = "alive"
		if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fill(t, client, ns)
		// A namespace is only acted on once deleted: sync it directly.
		if err := c.sync(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 1 {
			t.Fatalf("configmaps in an active namespace: %v, %v", err, cms)
		}
	})
}
