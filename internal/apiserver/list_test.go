package apiserver_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func createLabelled(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("cm-%02d", i),
			Labels: map[string]string{"parity": []string{"even", "odd"}[i%2], "tier": fmt.Sprint(i % 3)},
		}}
		if i%5 == 0 {
			cm.Labels["five"] = "yes"
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func names(list *corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	sort.Strings(out)
	return out
}

func TestListSelectors(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "sel")
	createLabelled(t, ctx, client, "sel", 10)
	cases := []struct {
		label, field string
		want         int
	}{
		{label: "parity=even", want: 5},
		{label: "parity!=even", want: 5},
		{label: "tier in (0,2)", want: 7},
		{label: "tier notin (0,2)", want: 3},
		{label: "five", want: 2},
		{label: "!five", want: 8},
		{label: "parity=odd,tier=1", want: 2},
		{field: "metadata.name=cm-03", want: 1},
		{field: "metadata.name!=cm-03", want: 9},
		{field: "metadata.namespace=sel", want: 10},
		{label: "parity=even", field: "metadata.name=cm-04", want: 1},
	}
	for _, rv := range []string{"", "0"} {
		for _, c := range cases {
			list, err := client.CoreV1().ConfigMaps("sel").List(ctx, metav1.ListOptions{LabelSelector: c.label, FieldSelector: c.field, ResourceVersion: rv})
			if err != nil {
				t.Fatalf("%q %q: %v", c.label, c.field, err)
			}
			if len(list.Items) != c.want {
				t.Errorf("rv=%q labels %q fields %q: %d items %v, want %d", rv, c.label, c.field, len(list.Items), names(list), c.want)
			}
		}
	}
	_, err := client.CoreV1().ConfigMaps("sel").List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=1"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want 400 BadRequest", err)
	}
	_, err = client.CoreV1().ConfigMaps("sel").List(ctx, metav1.ListOptions{LabelSelector: "a in (("})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("malformed label selector: %v, want 400 BadRequest", err)
	}
	// The per-resource fields kubectl and controllers use.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := client.CoreV1().Pods("sel").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]int{"spec.nodeName=n1": 1, "spec.nodeName=n2": 0, "status.phase=Pending": 1, "status.phase!=Pending": 0} {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(pods.Items) != want {
			t.Errorf("pods with %s: %v items, %v; want %d", sel, len(pods.Items), err, want)
		}
	}
}

func TestListPagination(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "page")
	createLabelled(t, ctx, client, "page", 25)
	cms := client.CoreV1().ConfigMaps("page")
	var seen []string
	opts := metav1.ListOptions{Limit: 10}
	pages := 0
	var firstRV string
	for {
		list, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if firstRV == "" {
			firstRV = list.ResourceVersion
			// A change after the first page must not show in the next pages.
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-zz-late"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if list.ResourceVersion != firstRV {
			t.Errorf("page %d at resourceVersion %s, want the first page's %s", pages, list.ResourceVersion, firstRV)
		}
		seen = append(seen, names(list)...)
		if list.Continue == "" {
			if list.RemainingItemCount != nil {
				t.Errorf("last page has remainingItemCount %d", *list.RemainingItemCount)
			}
			break
		}
		if list.RemainingItemCount == nil || *list.RemainingItemCount != int64(25-len(seen)) {
			t.Errorf("page %d remainingItemCount %v, want %d", pages, list.RemainingItemCount, 25-len(seen))
		}
		opts.Continue = list.Continue
	}
	if pages != 3 || len(seen) != 25 {
		t.Fatalf("%d pages with %d items, want 3 pages with 25", pages, len(seen))
	}
	// A limited list with a selector fills its pages with matches only.
	list, err := cms.List(ctx, metav1.ListOptions{Limit: 4, LabelSelector: "parity=odd"})
	if err != nil || len(list.Items) != 4 || list.Continue == "" {
		t.Fatalf("selector page: %d items, continue %q, %v; want 4 and a continue token", len(list.Items), list.Continue, err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 4, Continue: "not-a-token"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue token: %v, want 400", err)
	}
}

// TestListExactAndCompacted: resourceVersionMatch=Exact reads history, and a
// continue token whose revision was compacted gets 410 with a fresh token.
func TestListExactAndCompacted(t *testing.T) {
	ctx := testContext(t)
	srv, client := newClient(t, "exact")
	createLabelled(t, ctx, client, "exact", 6)
	cms := client.CoreV1().ConfigMaps("exact")
	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "cm-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(old.Items) != 6 {
		t.Fatalf("exact list at %s: %d items, %v; want the 6 that existed then", before.ResourceVersion, len(old.Items), err)
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev, err := srv.Store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != 410 || status.Status().Reason != metav1.StatusReasonExpired {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
	fresh := status.Status().ListMeta.Continue
	if fresh == "" {
		t.Fatal("the 410 carries no fresh continue token")
	}
	rest, err := cms.List(ctx, metav1.ListOptions{Limit: 100, Continue: fresh})
	if err != nil || len(rest.Items) == 0 {
		t.Fatalf("list with the fresh continue token: %d items, %v", len(rest.Items), err)
	}
}
