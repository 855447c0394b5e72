package namespace

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// TestDiscoveryFailure runs one deletion pass with a discovery that fails
// for one group: what was discovered is deleted, the failure is reported in
// the NamespaceDeletionDiscoveryFailure condition, and the namespace is kept.
func TestDiscoveryFailure(t *testing.T) {
	cctx := newContext(t)
	ctx := context.Background()
	client := cctx.Client
	const ns = "half-discovered"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	failing := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	d := New(cctx).deleter
	d.discover = func() ([]*metav1.APIResourceList, error) {
		return []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap",
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}},
		}}, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{failing: errors.New("the server is currently unable to handle the request")}}
	}

	err := d.Delete(ctx, ns)
	if err == nil || !strings.Contains(err.Error(), "metrics.k8s.io/v1beta1") {
		t.Fatalf("Delete = %v, want the discovery error", err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap of a discovered resource: %v, want it deleted", err)
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace finalized despite the discovery failure: %v", err)
	}
	want := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request"
	if !conditionIs(got, corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", want) {
		t.Errorf("conditions = %+v, want DiscoveryFailed %q", got.Status.Conditions, want)
	}
	if !conditionIs(got, corev1.NamespaceContentRemaining, corev1.ConditionFalse, "ContentRemoved", "All content successfully removed") {
		t.Errorf("conditions = %+v, want ContentRemoved", got.Status.Conditions)
	}
}
