package staticpods

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder collects the keys OnChange is told.
type recorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *recorder) add(key string) { r.mu.Lock(); r.keys = append(r.keys, key); r.mu.Unlock() }

// take returns the keys told since the last take, sorted.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := r.keys
	r.keys = nil
	slices.Sort(keys)
	return keys
}

func podYAML(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers: [{name: c, image: " + image + "}]\n"
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newTestSource is a Source on a temporary directory whose polls the test
// makes itself (no Start), with a log the test can read.
func newTestSource(t *testing.T) (*Source, string, *recorder, *bytes.Buffer) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := NewSource(dir, "node-1", slog.New(slog.NewTextHandler(&logs, nil)))
	rec := &recorder{}
	s.OnChange(rec.add)
	return s, dir, rec, &logs
}

func TestSourcePolls(t *testing.T) {
	s, dir, rec, logs := newTestSource(t)
	write(t, dir, "a.yaml", podYAML("a", "busybox"))
	write(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"edge"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	write(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c, image: x, comand: [sh]}]}\n")
	write(t, dir, ".hidden.yaml", podYAML("hidden", "busybox"))
	write(t, dir, "notes.txt", podYAML("notes", "busybox"))
	write(t, dir, "a.yaml~", podYAML("backup", "busybox"))
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}

	type step struct {
		name    string
		change  func()
		changed []string // keys OnChange is told
		served  []string // keys List returns
		logged  []string // in the log since the last step
	}
	var uidA string
	steps := []step{
		{name: "first read: bad files skipped, the others served", change: func() {},
			changed: []string{"default/a-node-1", "edge/b-node-1"}, served: []string{"default/a-node-1", "edge/b-node-1"},
			logged: []string{"bad.yaml", `unknown field \"spec.containers[0].comand\"`, "notes.txt", "sub.yaml"}},
		{name: "nothing changed", change: func() {}, served: []string{"default/a-node-1", "edge/b-node-1"}},
		{name: "the bad file fixed", change: func() { write(t, dir, "bad.yaml", podYAML("bad", "x")) },
			changed: []string{"default/bad-node-1"}, served: []string{"default/a-node-1", "default/bad-node-1", "edge/b-node-1"}},
		{name: "a rewritten with the same content", change: func() { write(t, dir, "a.yaml", podYAML("a", "busybox")) },
			served: []string{"default/a-node-1", "default/bad-node-1", "edge/b-node-1"}},
		{name: "a changed", change: func() { write(t, dir, "a.yaml", podYAML("a", "busybox:1.36")) },
			changed: []string{"default/a-node-1"}, served: []string{"default/a-node-1", "default/bad-node-1", "edge/b-node-1"}},
		{name: "b removed", change: func() { os.Remove(filepath.Join(dir, "b.json")) },
			changed: []string{"edge/b-node-1"}, served: []string{"default/a-node-1", "default/bad-node-1"}},
		{name: "a second file of pod a is shadowed", change: func() { write(t, dir, "z.yaml", podYAML("a", "other")) },
			served: []string{"default/a-node-1", "default/bad-node-1"}, logged: []string{"z.yaml", "same name"}},
		{name: "the first file of pod a removed: the second serves it", change: func() { os.Remove(filepath.Join(dir, "a.yaml")) },
			changed: []string{"default/a-node-1"}, served: []string{"default/a-node-1", "default/bad-node-1"}},
		{name: "bad broken again: its pod goes", change: func() { write(t, dir, "bad.yaml", "kind: [") },
			changed: []string{"default/bad-node-1"}, served: []string{"default/a-node-1"}, logged: []string{"bad.yaml"}},
		{name: "directory removed", change: func() { os.RemoveAll(dir) },
			changed: []string{"default/a-node-1"}, logged: []string{"does not exist"}},
	}
	for i, st := range steps {
		st.change()
		logs.Reset()
		s.poll()
		if i == 0 {
			pod, ok := s.Get("default", "a-node-1")
			if !ok {
				t.Fatal("Get(default, a-node-1): not found")
			}
			uidA = string(pod.UID)
		}
		if got := rec.take(); !slices.Equal(got, st.changed) {
			t.Errorf("%s: OnChange told %v, want %v", st.name, got, st.changed)
		}
		var served []string
		for _, p := range s.List() {
			served = append(served, p.Namespace+"/"+p.Name)
		}
		if !slices.Equal(served, st.served) {
			t.Errorf("%s: List = %v, want %v", st.name, served, st.served)
		}
		for _, key := range st.served {
			ns, name, _ := strings.Cut(key, "/")
			if _, ok := s.Get(ns, name); !ok {
				t.Errorf("%s: Get(%s): not found", st.name, key)
			}
		}
		for _, l := range st.logged {
			if !strings.Contains(logs.String(), l) {
				t.Errorf("%s: the log does not mention %q:\n%s", st.name, l, logs.String())
			}
		}
		if len(st.logged) == 0 && logs.Len() > 0 && strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("%s: errors logged again:\n%s", st.name, logs.String())
		}
		if st.name == "a changed" {
			pod, _ := s.Get("default", "a-node-1")
			if string(pod.UID) == uidA {
				t.Errorf("a changed: UID %s unchanged", pod.UID)
			}
		}
	}
	if _, ok := s.Get("default", "a-node-1"); ok {
		t.Error("Get after the directory was removed: found")
	}
}

func TestSourceKeepsSeenAndCopies(t *testing.T) {
	s, dir, _, _ := newTestSource(t)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	s.now = func() time.Time { return clock }
	write(t, dir, "a.yaml", podYAML("a", "busybox"))
	s.poll()
	first, _ := s.Get("default", "a-node-1")
	want(t, "config.seen", first.Annotations[AnnotationSeen], "2026-01-02T03:04:05.000000006Z")

	clock = clock.Add(time.Hour)
	write(t, dir, "a.yaml", podYAML("a", "busybox")+"# touched\n")
	s.poll()
	again, _ := s.Get("default", "a-node-1")
	want(t, "config.seen after a change that changes nothing", again.Annotations[AnnotationSeen], first.Annotations[AnnotationSeen])

	write(t, dir, "a.yaml", podYAML("a", "busybox:2"))
	s.poll()
	changed, _ := s.Get("default", "a-node-1")
	want(t, "config.seen after a change", changed.Annotations[AnnotationSeen], "2026-01-02T04:04:05.000000006Z")

	changed.Labels = map[string]string{"mutated": "yes"}
	if p, _ := s.Get("default", "a-node-1"); p.Labels["mutated"] != "" {
		t.Error("Get returns the served pod itself, not a copy")
	}
}

func TestSourceStart(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "busybox"))
	s := NewSource(dir, "node-1", quiet)
	s.interval = 20 * time.Millisecond
	changes := make(chan string, 16)
	s.OnChange(func(key string) { changes <- key })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	// Generous deadlines: the test waits for events, it does not time them.
	const deadline = 60 * time.Second
	select {
	case <-s.Synced():
	case <-time.After(deadline):
		t.Fatal("not synced")
	}
	if _, ok := s.Get("default", "a-node-1"); !ok {
		t.Fatal("synced without the pod of a.yaml")
	}
	expect := func(what, key string) {
		t.Helper()
		select {
		case got := <-changes:
			if got != key {
				t.Fatalf("%s: OnChange(%q), want %q", what, got, key)
			}
		case <-time.After(deadline):
			t.Fatalf("%s: OnChange not called", what)
		}
	}
	expect("first read", "default/a-node-1")

	write(t, dir, "b.yml", podYAML("b", "busybox"))
	expect("file added", "default/b-node-1")
	if _, ok := s.Get("default", "b-node-1"); !ok {
		t.Error("added pod not served")
	}

	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	expect("file removed", "default/a-node-1")
	if _, ok := s.Get("default", "a-node-1"); ok {
		t.Error("removed pod still served")
	}
}
