package history

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

var stsKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func parent(name string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
}

// raw is JSON data holding s.
func raw(s string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"v":"` + s + `"}`)}
}

func TestHashIsStableAndSalted(t *testing.T) {
	a := &appsv1.ControllerRevision{Data: raw(`{"spec":1}`)}
	b := &appsv1.ControllerRevision{Data: raw(`{"spec":2}`)}
	one, two := int32(1), int32(2)
	if Hash(a, nil) != Hash(a.DeepCopy(), nil) {
		t.Fatal("the same data hashed differently")
	}
	seen := map[string]string{}
	for name, h := range map[string]string{
		"a": Hash(a, nil), "b": Hash(b, nil), "a+1": Hash(a, &one), "a+2": Hash(a, &two),
	} {
		if prev, ok := seen[h]; ok {
			t.Fatalf("%s and %s share hash %q", prev, name, h)
		}
		seen[h] = name
	}
	// Data.Object is hashed too when there is no Raw.
	o1 := &appsv1.ControllerRevision{Data: runtime.RawExtension{Object: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}}
	o2 := &appsv1.ControllerRevision{Data: runtime.RawExtension{Object: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "y"}}}}
	if Hash(o1, nil) == Hash(o2, nil) {
		t.Fatal("different objects share a hash")
	}
}

// The hash is upstream's: 32-bit FNV-1 of the data, printed in decimal and
// safe-encoded. The expected value was computed independently from that
// definition.
func TestHashMatchesUpstreamEncoding(t *testing.T) {
	rev := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte("a")}}
	// FNV-1 32 of "a" is 0x050c5d7e = 84696446.
	if got, want := Hash(rev, nil), "d8bfb88b"; got != want {
		t.Fatalf("Hash = %q, want %q", got, want)
	}
}

func TestNew(t *testing.T) {
	p := parent("web")
	two := int32(2)
	rev, err := New(p, stsKind, map[string]string{"app": "web"}, raw(`{"x":1}`), 3, &two)
	if err != nil {
		t.Fatal(err)
	}
	hash := Hash(rev, &two)
	if rev.Name != "web-"+hash || rev.Labels[ControllerRevisionHashLabel] != hash || rev.Labels["app"] != "web" || rev.Revision != 3 {
		t.Fatalf("got %+v", rev.ObjectMeta)
	}
	ref := metav1.GetControllerOf(rev)
	if ref == nil || ref.UID != p.UID || ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Fatalf("owner reference %+v", rev.OwnerReferences)
	}
	if got := Name(string(repeat('a', 300)), "h"); len(got) != maxPrefixLen+2 {
		t.Fatalf("Name of a long parent has %d characters", len(got))
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestEqualAndFindEqual(t *testing.T) {
	a := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: raw("1")}
	b := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: raw("2")}
	c := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: raw("1")}
	tests := []struct {
		x, y *appsv1.ControllerRevision
		want bool
	}{
		{a, c, true}, {a, b, false}, {nil, nil, true}, {a, nil, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.x, tt.y); got != tt.want {
			t.Errorf("Equal(%v, %v) = %v", tt.x, tt.y, got)
		}
	}
	got := FindEqual([]*appsv1.ControllerRevision{a, b, c}, a)
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Fatalf("FindEqual = %v", got)
	}
}

func TestSort(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	rev := func(name string, n int64, at metav1.Time) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at}, Revision: n}
	}
	revs := []*appsv1.ControllerRevision{rev("d", 3, t0), rev("c", 1, t1), rev("b", 1, t0), rev("a", 1, t0), rev("e", 2, t1)}
	Sort(revs)
	var got string
	for _, r := range revs {
		got += r.Name
	}
	if got != "abced" {
		t.Fatalf("order %q, want abced", got)
	}
}

// env is a fake clientset whose objects are mirrored into a lister.
type env struct {
	client  *fake.Clientset
	indexer cache.Indexer
	h       History
}

func newEnv(objs ...*appsv1.ControllerRevision) *env {
	var rt []runtime.Object
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		rt = append(rt, o)
		indexer.Add(o)
	}
	client := fake.NewClientset(rt...)
	return &env{client: client, indexer: indexer, h: NewHistory(client, appslisters.NewControllerRevisionLister(indexer))}
}

func (e *env) get(t *testing.T, name string) *appsv1.ControllerRevision {
	t.Helper()
	rev, err := e.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestListAdoptsAndReleases(t *testing.T) {
	p := parent("web")
	other := parent("db")
	mk := func(name string, lbl string, owner *appsv1.StatefulSet) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-rev-" + name), Labels: map[string]string{"app": lbl}},
			Data:       raw(name),
		}
		if owner != nil {
			r.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, stsKind)}
		}
		return r
	}
	e := newEnv(
		mk("mine", "web", p),
		mk("orphan", "web", nil),
		mk("orphan-other-app", "db", nil),
		mk("theirs", "web", other),
		mk("mine-relabelled", "db", p),
	)
	got, err := e.h.List(p, labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range got {
		names[r.Name] = true
	}
	if len(got) != 2 || !names["mine"] || !names["orphan"] {
		t.Fatalf("List returned %v, want mine and orphan", names)
	}
	if ref := metav1.GetControllerOf(e.get(t, "orphan")); ref == nil || ref.UID != p.UID || ref.Kind != "StatefulSet" {
		t.Fatalf("orphan not adopted: %+v", e.get(t, "orphan").OwnerReferences)
	}
	if refs := e.get(t, "mine-relabelled").OwnerReferences; len(refs) != 0 {
		t.Fatalf("revision that no longer matches was not released: %+v", refs)
	}
	if refs := e.get(t, "orphan-other-app").OwnerReferences; len(refs) != 0 {
		t.Fatalf("adopted a revision the selector does not match: %+v", refs)
	}
	if ref := metav1.GetControllerOf(e.get(t, "theirs")); ref == nil || ref.UID != other.UID {
		t.Fatal("took another controller's revision")
	}
}

func TestListDoesNotAdoptWhenParentIsBeingDeleted(t *testing.T) {
	p := parent("web")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	orphan := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "ns", Labels: map[string]string{"app": "web"}}, Data: raw("o")}
	e := newEnv(orphan)
	got, err := e.h.List(p, labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || len(got) != 0 {
		t.Fatalf("List = %v, %v; want nothing", got, err)
	}
	if refs := e.get(t, "o").OwnerReferences; len(refs) != 0 {
		t.Fatalf("adopted while being deleted: %+v", refs)
	}
}

func TestCreateHandlesCollisions(t *testing.T) {
	ctx := context.Background()
	p := parent("web")
	var count int32
	rev, _ := New(p, stsKind, nil, raw("new"), 1, &count)
	// Another revision with other data already holds the name.
	squatter := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: rev.Name, Namespace: "ns"}, Data: raw("other")}
	e := newEnv(squatter)
	created, err := e.h.Create(ctx, p, rev, &count)
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	if count != 1 || created.Name != Name("web", Hash(rev, &one)) || !Equal(created, rev) || created.Namespace != "ns" {
		t.Fatalf("collisionCount %d, created %s with %s", count, created.Name, created.Data.Raw)
	}
	if created.Labels[ControllerRevisionHashLabel] != Hash(rev, &one) {
		t.Fatalf("hash label %q does not follow the name", created.Labels[ControllerRevisionHashLabel])
	}
	// Creating the same data again returns the existing revision.
	again, err := e.h.Create(ctx, p, rev, &count)
	if err != nil || again.Name != created.Name || count != 1 {
		t.Fatalf("second Create: %v, %v, count %d", again, err, count)
	}
	if _, err := e.h.Create(ctx, p, rev, nil); err == nil {
		t.Fatal("Create accepted a nil collisionCount")
	}
}

func TestUpdateRevisionAndDelete(t *testing.T) {
	ctx := context.Background()
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Data: raw("x"), Revision: 1}
	e := newEnv(rev)
	updated, err := e.h.UpdateRevision(ctx, rev, 5)
	if err != nil || updated.Revision != 5 || e.get(t, "r").Revision != 5 {
		t.Fatalf("UpdateRevision: %v, %v", updated, err)
	}
	if err := e.h.Delete(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.AppsV1().ControllerRevisions("ns").Get(ctx, "r", metav1.GetOptions{}); err == nil {
		t.Fatal("revision still there after Delete")
	}
	if err := e.h.Delete(ctx, rev); err != nil {
		t.Fatalf("deleting a revision already gone: %v", err)
	}
}
