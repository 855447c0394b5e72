package garbagecollector

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func ref(uid string, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner-" + uid, UID: types.UID(uid)}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

func TestReferencesDiffs(t *testing.T) {
	tests := []struct {
		name                    string
		old, new                []metav1.OwnerReference
		added, removed, changed []string
	}{
		{name: "same", old: []metav1.OwnerReference{ref("a", false)}, new: []metav1.OwnerReference{ref("a", false)}},
		{name: "added", old: nil, new: []metav1.OwnerReference{ref("a", false)}, added: []string{"a"}},
		{name: "removed", old: []metav1.OwnerReference{ref("a", false), ref("b", false)}, new: []metav1.OwnerReference{ref("b", false)}, removed: []string{"a"}},
		{name: "unblocked", old: []metav1.OwnerReference{ref("a", true)}, new: []metav1.OwnerReference{ref("a", false)}, changed: []string{"a"}},
		{name: "all", old: []metav1.OwnerReference{ref("a", false), ref("b", true)}, new: []metav1.OwnerReference{ref("b", false), ref("c", false)},
			added: []string{"c"}, removed: []string{"a"}, changed: []string{"b"}},
	}
	uids := func(refs []metav1.OwnerReference) []string {
		var out []string
		for _, r := range refs {
			out = append(out, string(r.UID))
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			added, removed, changed := referencesDiffs(tt.old, tt.new)
			var changedUIDs []string
			for _, c := range changed {
				changedUIDs = append(changedUIDs, string(c.newRef.UID))
			}
			if !reflect.DeepEqual(uids(added), tt.added) || !reflect.DeepEqual(uids(removed), tt.removed) || !reflect.DeepEqual(changedUIDs, tt.changed) {
				t.Errorf("got added %v removed %v changed %v; want %v %v %v", uids(added), uids(removed), changedUIDs, tt.added, tt.removed, tt.changed)
			}
		})
	}
}

func TestDeletionStartsWithFinalizer(t *testing.T) {
	now := metav1.Now()
	obj := func(deleting bool, finalizers ...string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Finalizers: finalizers}}
		if deleting {
			o.DeletionTimestamp = &now
		}
		return o
	}
	tests := []struct {
		name     string
		old      any
		new      *metav1.PartialObjectMetadata
		expected bool
	}{
		{"first seen deleting", nil, obj(true, metav1.FinalizerOrphanDependents), true},
		{"starts deleting", obj(false, metav1.FinalizerOrphanDependents), obj(true, metav1.FinalizerOrphanDependents), true},
		{"finalizer added while deleting", obj(true), obj(true, metav1.FinalizerOrphanDependents), true},
		{"already deleting", obj(true, metav1.FinalizerOrphanDependents), obj(true, metav1.FinalizerOrphanDependents), false},
		{"not deleting", nil, obj(false, metav1.FinalizerOrphanDependents), false},
		{"other finalizer", nil, obj(true, metav1.FinalizerDeleteDependents), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deletionStartsWithFinalizer(tt.old, tt.new, metav1.FinalizerOrphanDependents); got != tt.expected {
				t.Errorf("got %v, want %v", got, tt.expected)
			}
		})
	}
}

func TestPartitionAndBlockingDependents(t *testing.T) {
	owner := objectReference{OwnerReference: coordinates(ref("o", false)), Namespace: "ns"}
	dep := func(name, ns string, refs ...metav1.OwnerReference) *node {
		return newNode(objectReference{OwnerReference: metav1.OwnerReference{Name: name, UID: types.UID(name)}, Namespace: ns}, refs)
	}
	wrongKind := ref("o", true)
	wrongKind.Kind = "Secret"
	blocking := dep("blocking", "ns", ref("o", true))
	loose := dep("loose", "ns", ref("o", false))
	otherNS := dep("other-ns", "elsewhere", ref("o", true))
	otherKind := dep("other-kind", "ns", wrongKind)
	unrelated := dep("unrelated", "ns", ref("x", true))
	deps := []*node{blocking, loose, otherNS, otherKind, unrelated}

	matching, nonmatching := partitionDependents(deps, owner)
	names := func(ns []*node) map[string]bool {
		out := map[string]bool{}
		for _, n := range ns {
			out[n.identity.Name] = true
		}
		return out
	}
	if want := map[string]bool{"blocking": true, "loose": true}; !reflect.DeepEqual(names(matching), want) {
		t.Errorf("matching = %v, want %v", names(matching), want)
	}
	if want := map[string]bool{"other-ns": true, "other-kind": true}; !reflect.DeepEqual(names(nonmatching), want) {
		t.Errorf("nonmatching = %v, want %v", names(nonmatching), want)
	}
	if alt := alternateOwnerIdentity(nonmatching, owner); alt == nil || *alt == owner {
		t.Errorf("alternate identity = %v, want one besides %v", alt, owner)
	}

	n := newNode(owner, nil)
	for _, d := range deps {
		n.addDependent(d)
	}
	if got, want := names(n.blockingDependents()), map[string]bool{"blocking": true, "other-ns": true, "other-kind": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("blocking dependents = %v, want %v", got, want)
	}
}

func TestReferenceCache(t *testing.T) {
	c := newReferenceCache(2)
	a, b, d := objectReference{Namespace: "a"}, objectReference{Namespace: "b"}, objectReference{Namespace: "d"}
	c.Add(a)
	c.Add(b)
	c.Has(a) // a is now the most recently used
	c.Add(d) // evicts b
	for ref, want := range map[objectReference]bool{a: true, b: false, d: true} {
		if got := c.Has(ref); got != want {
			t.Errorf("Has(%v) = %v, want %v", ref, got, want)
		}
	}
}

// TestPatches applies the strategic merge patches the collector sends to a
// ConfigMap, as the apiserver would.
func TestPatches(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "dep", OwnerReferences: []metav1.OwnerReference{ref("a", true), ref("b", true), ref("c", false)}}}
	original, _ := json.Marshal(cm)
	apply := func(t *testing.T, patch []byte) *corev1.ConfigMap {
		t.Helper()
		out, err := strategicpatch.StrategicMergePatch(original, patch, &corev1.ConfigMap{})
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	t.Run("delete owner refs", func(t *testing.T) {
		patch, err := deleteOwnerRefsStrategicPatch("dep", "a", "c")
		if err != nil {
			t.Fatal(err)
		}
		got := apply(t, patch)
		if uids := refUIDs(got.OwnerReferences); !reflect.DeepEqual(uids, []types.UID{"b"}) || got.UID != "dep" {
			t.Errorf("owners %v uid %q, want [b] dep", uids, got.UID)
		}
	})
	t.Run("unblock owner refs", func(t *testing.T) {
		n := newNode(objectReference{OwnerReference: metav1.OwnerReference{UID: "dep"}}, cm.OwnerReferences)
		patch, err := unblockOwnerRefsStrategicPatch(n)
		if err != nil {
			t.Fatal(err)
		}
		got := apply(t, patch)
		if len(got.OwnerReferences) != 3 {
			t.Fatalf("owners = %v, want 3", got.OwnerReferences)
		}
		for _, r := range got.OwnerReferences {
			if isTrue(r.BlockOwnerDeletion) {
				t.Errorf("%s still blocks its owner", r.UID)
			}
		}
	})
}
