package storage

import (
	"errors"
	"testing"
)

func TestCacheWatcherQueue(t *testing.T) {
	backlog := []CachedEvent{{Type: Added, Key: "a", Revision: 5}}
	w := newCacheWatcher(backlog, 3)
	if !w.offer(CachedEvent{Type: Added, Key: "a", Revision: 5}) {
		t.Fatal("an event the backlog covers was refused")
	}
	// Nobody reads: the watcher takes watcherBuffer live events, then says
	// it is too slow.
	for i := range watcherBuffer {
		if !w.offer(CachedEvent{Type: Modified, Key: "a", Revision: int64(6 + i)}) {
			t.Fatalf("live event %d refused before the buffer was full", i)
		}
	}
	if w.offer(CachedEvent{Type: Modified, Key: "a", Revision: int64(6 + watcherBuffer)}) {
		t.Fatal("an event past a full buffer was taken")
	}
	// The backlog, then the live events in order, without the covered one.
	want := int64(5)
	for range watcherBuffer + 1 {
		ev := <-w.out
		if ev.Revision != want {
			t.Fatalf("got revision %d, want %d", ev.Revision, want)
		}
		want++
	}
	// Drained, it takes events again, and ends with the error it is given.
	if !w.offer(CachedEvent{Type: Deleted, Key: "a", Revision: want}) {
		t.Fatal("a drained watcher refused an event")
	}
	if ev := <-w.out; ev.Type != Deleted || ev.Revision != want {
		t.Fatalf("got %v at %d after draining, want DELETED at %d", ev.Type, ev.Revision, want)
	}
	w.end(errors.New("gone"))
	ev, ok := <-w.out
	if !ok || ev.Type != Error || ev.Err == nil || ev.Err.Error() != "gone" {
		t.Fatalf("got %+v (open %v), want the final error", ev, ok)
	}
	if _, ok := <-w.out; ok {
		t.Fatal("out is still open after the final error")
	}
}
