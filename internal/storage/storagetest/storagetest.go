// Package storagetest is the conformance suite every storage.Interface
// implementation passes: call Run from the implementation's tests.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"orch/internal/storage"
)

// Run checks store against the storage.Interface contract. Each subtest uses
// its own prefix, so one store can serve them all.
func Run(t *testing.T, store storage.Interface) {
	t.Run("CreateGet", func(t *testing.T) { testCreateGet(t, store, "/test/create/") })
	t.Run("Update", func(t *testing.T) { testUpdate(t, store, "/test/update/") })
	t.Run("Delete", func(t *testing.T) { testDelete(t, store, "/test/delete/") })
	t.Run("ListPages", func(t *testing.T) { testList(t, store, "/test/list/") })
	t.Run("Watch", func(t *testing.T) { testWatch(t, store, "/test/watch/") })
}

func testCreateGet(t *testing.T, s storage.Interface, prefix string) {
	ctx := context.Background()
	rev, err := s.Create(ctx, prefix+"a", []byte("one"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	kv, err := s.Get(ctx, prefix+"a")
	if err != nil || string(kv.Value) != "one" || kv.Revision != rev {
		t.Fatalf("get = %+v, %v; want value one at revision %d", kv, err, rev)
	}
	if _, err := s.Create(ctx, prefix+"a", []byte("two")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if _, err := s.Get(ctx, prefix+"missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
}

func testUpdate(t *testing.T, s storage.Interface, prefix string) {
	ctx := context.Background()
	rev, err := s.Create(ctx, prefix+"a", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Update(ctx, prefix+"a", []byte("two"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update = %d, %v; want a revision after %d", rev2, err, rev)
	}
	if _, err := s.Update(ctx, prefix+"a", []byte("three"), rev); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, prefix+"missing", []byte("x"), 5); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update of missing key: %v, want ErrNotFound", err)
	}
	kv, _ := s.Get(ctx, prefix+"a")
	if string(kv.Value) != "two" {
		t.Fatalf("value after stale update = %q, want two", kv.Value)
	}
}

func testDelete(t *testing.T, s storage.Interface, prefix string) {
	ctx := context.Background()
	rev, err := s.Create(ctx, prefix+"a", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, prefix+"a", rev-1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("delete with a stale revision: %v, want ErrConflict", err)
	}
	kv, err := s.Delete(ctx, prefix+"a", rev)
	if err != nil || string(kv.Value) != "one" || kv.Revision <= rev {
		t.Fatalf("delete = %+v, %v; want the last value and a newer revision", kv, err)
	}
	if _, err := s.Delete(ctx, prefix+"a", 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v, want ErrNotFound", err)
	}
}

func testList(t *testing.T, s storage.Interface, prefix string) {
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("%s%d", prefix, i), []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, prefix[:len(prefix)-1]+"x/outside", []byte("no")); err != nil {
		t.Fatal(err)
	}
	first, err := s.List(ctx, prefix, storage.ListOptions{Limit: 2})
	if err != nil || len(first.KVs) != 2 || !first.More || first.Remaining != 3 {
		t.Fatalf("first page = %+v, %v; want 2 keys, more, 3 remaining", first, err)
	}
	// A change after the first page must not show in later pages read at its revision.
	if _, err := s.Create(ctx, prefix+"9", []byte("late")); err != nil {
		t.Fatal(err)
	}
	rest, err := s.List(ctx, prefix, storage.ListOptions{Revision: first.Revision, StartKey: first.KVs[1].Key + "\x00"})
	if err != nil || len(rest.KVs) != 3 || rest.More {
		t.Fatalf("rest = %+v, %v; want the 3 keys that existed at revision %d", rest, err, first.Revision)
	}
	all, err := s.List(ctx, prefix, storage.ListOptions{})
	if err != nil || len(all.KVs) != 6 {
		t.Fatalf("latest list has %d keys, %v; want 6", len(all.KVs), err)
	}
}

func testWatch(t *testing.T, s storage.Interface, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := s.Create(ctx, prefix+"before", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	events := s.Watch(ctx, prefix, rev)
	r1, _ := s.Create(ctx, prefix+"a", []byte("1"))
	r2, _ := s.Update(ctx, prefix+"a", []byte("2"), r1)
	if _, err := s.Delete(ctx, prefix+"a", r2); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ   storage.EventType
		value string
	}{{storage.Added, "1"}, {storage.Modified, "2"}, {storage.Deleted, "2"}}
	for i, w := range want {
		select {
		case ev := <-events:
			if ev.Type != w.typ || string(ev.KV.Value) != w.value || ev.KV.Key != prefix+"a" {
				t.Fatalf("event %d = %s %q %q, want %s %q", i, ev.Type, ev.KV.Key, ev.KV.Value, w.typ, w.value)
			}
			if w.typ != storage.Added && (ev.Prev == nil || ev.Prev.Value == nil) {
				t.Fatalf("event %d (%s) has no previous value", i, ev.Type)
			}
		case <-ctx.Done():
			t.Fatalf("no event %d", i)
		}
	}
}
