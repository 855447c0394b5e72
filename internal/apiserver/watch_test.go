package apiserver_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended early")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	return watch.Event{}
}

func TestWatchFromResourceVersionWithSelectors(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "w")
	cms := client.CoreV1().ConfigMaps("w")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Changes: b added (matches), a relabelled (stops matching → DELETED),
	// c added without the label (not seen), c labelled (→ ADDED), b deleted.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"app": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Labels["app"] = "y"
	if _, err := cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Labels = map[string]string{"app": "x"}
	if _, err := cms.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "b"}, {watch.Deleted, "a"}, {watch.Added, "c"}, {watch.Deleted, "b"}}
	for i, wnt := range want {
		ev := nextEvent(t, w)
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || ev.Type != wnt.typ || cm.Name != wnt.name {
			t.Fatalf("event %d = %s %v, want %s %s", i, ev.Type, ev.Object, wnt.typ, wnt.name)
		}
	}
}

func TestWatchListInitialEvents(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "wl")
	cms := client.CoreV1().ConfigMaps("wl")
	for _, name := range []string{"one", "two"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, name := range []string{"one", "two"} {
		ev := nextEvent(t, w)
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != name {
			t.Fatalf("initial event = %s %v, want ADDED %s", ev.Type, ev.Object, name)
		}
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark || ev.Object.(*corev1.ConfigMap).Annotations["k8s.io/initial-events-end"] != "true" {
		t.Fatalf("after the initial events: %s %v, want the initial-events-end bookmark", ev.Type, ev.Object)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "three"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "three" {
		t.Fatalf("live event = %s %v", ev.Type, ev.Object)
	}
	// sendInitialEvents without bookmarks is refused, as upstream.
	if _, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes}); !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
		t.Errorf("sendInitialEvents without allowWatchBookmarks: %v, want a 4xx", err)
	}
}

// TestWatchCompactedIsGone: a watch from a compacted revision gets 410.
func TestWatchCompactedIsGone(t *testing.T) {
	ctx := testContext(t)
	srv, client := newClient(t, "gone")
	cms := client.CoreV1().ConfigMaps("gone")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Push the change out of the watch cache's history and compact etcd.
	for i := 0; i < 1100; i++ {
		first.Data = map[string]string{"i": string(rune('a' + i%26))}
		if first, err = cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := srv.Store.CurrentRevision(ctx)
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "2"})
	if err == nil {
		ev := nextEvent(t, w)
		status, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || status.Code != 410 {
			t.Fatalf("watch from a compacted revision: %s %v, want an ERROR event with 410", ev.Type, ev.Object)
		}
		return
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from a compacted revision: %v, want 410", err)
	}
}
