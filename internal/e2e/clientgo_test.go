package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// contentTypes records the Content-Type of every response client-go gets.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen map[string]int
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.seen[req.Method+" "+resp.Header.Get("Content-Type")]++
		c.mu.Unlock()
	}
	return resp, err
}

// TestClientGoProtobuf: a typed clientset that speaks only protobuf
// creates, gets, lists, updates, watches and deletes ConfigMaps.
func TestClientGoProtobuf(t *testing.T) {
	s := StartServer(t)
	cfg := s.RestConfig(t)
	cfg.ContentType = protobufCT
	cfg.AcceptContentTypes = protobufCT
	seen := &contentTypes{seen: map[string]int{}}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { seen.next = rt; return seen }
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("default")

	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"e2e": "pb"}},
		Data: map[string]string{"a": "1"}}, metav1.CreateOptions{FieldManager: "e2e"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Data["a"] != "1" {
		t.Errorf("created %+v", created)
	}
	got, err := cms.Get(ctx, "pb", metav1.GetOptions{})
	if err != nil || got.UID != created.UID || got.Data["a"] != "1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "e2e=pb"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "pb" {
		t.Fatalf("list: %v %+v", err, list)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, LabelSelector: "e2e=pb"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	got.Data["a"] = "2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.Data["a"] != "2" || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("update: %v %+v", err, updated)
	}
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with the old resourceVersion: %v, want Conflict", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb2", Labels: map[string]string{"e2e": "pb"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pb2: %v", err)
	}
	expectEvents(t, w, "MODIFIED pb 2", "ADDED pb2 ")
	// client-go sends DeleteOptions in the request's content type: protobuf.
	if err := cms.Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := cms.Get(ctx, "pb", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	expectEvents(t, w, "DELETED pb 2")

	seen.mu.Lock()
	defer seen.mu.Unlock()
	for k := range seen.seen {
		if k != "GET "+protobufCT && k != "POST "+protobufCT && k != "PUT "+protobufCT && k != "DELETE "+protobufCT &&
			k != "GET "+protobufCT+";stream=watch" {
			t.Errorf("a %s response was not protobuf (counts %v)", k, seen.seen)
		}
	}
}

// expectEvents reads the next events of w: "TYPE name data[a]" each.
func expectEvents(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for i, wantEv := range want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %q", wantEv)
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("watch event %d: %s %#v, want %q", i, ev.Type, ev.Object, wantEv)
			}
			if g := string(ev.Type) + " " + cm.Name + " " + cm.Data["a"]; g != wantEv {
				t.Errorf("watch event: %q, want %q", g, wantEv)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("watch: no event %q within 30s", wantEv)
		}
	}
}

// TestClientGoDefaults: a clientset made from the kubeconfig with no
// content type set, as every client-go program and controller makes it.
// client-go 1.37 then sends built-in types as protobuf (JSON only as a
// fallback for reading), DeleteOptions bodies included.
func TestClientGoDefaults(t *testing.T) {
	s := StartServer(t)
	client, err := kubernetes.NewForConfig(s.RestConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cms := client.CoreV1().ConfigMaps("default")
	for _, name := range []string{"d1", "d2", "d3"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "d"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	if err := cms.Delete(ctx, "d1", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete: %v", err)
	}
	grace := int64(0)
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{LabelSelector: "e2e=d"}); err != nil {
		t.Errorf("deletecollection: %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "e2e=d"})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("after delete and deletecollection: %v, %d left, want none", err, len(list.Items))
	}
}
