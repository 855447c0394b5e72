package containerd

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// fakeStore "imports" an archive whose content is "name1,name2" and
// remembers what it holds.
type fakeStore struct {
	mu      sync.Mutex
	down    bool // containerd is not answering
	images  map[string]bool
	imports []string
}

func (s *fakeStore) Import(ctx context.Context, r io.Reader) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errors.New("connection refused")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(string(data), "bad") {
		return nil, errors.New("not an image archive")
	}
	names := strings.Split(string(data), ",")
	for _, n := range names {
		s.images[n] = true
	}
	s.imports = append(s.imports, string(data))
	return names, nil
}

func (s *fakeStore) Present(ctx context.Context, names []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return false, errors.New("connection refused")
	}
	for _, n := range names {
		if !s.images[n] {
			return false, nil
		}
	}
	return true, nil
}

func TestImporterImportsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	images := filepath.Join(dir, "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{images: map[string]bool{}}
	builtins := []Builtin{{Name: "pause:1", Write: func(w io.Writer) error { _, err := io.WriteString(w, "pause:1"); return err }}}
	newImporter := func() *Importer {
		im := NewImporter(store, images, filepath.Join(dir, "state.json"), builtins, nil)
		im.Settle = 0
		return im
	}
	im := newImporter()
	write := func(name string, data []byte) string {
		t.Helper()
		path := filepath.Join(images, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	step := func(name string, want ...string) {
		t.Helper()
		got, err := im.Sync(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: imported %q, want %q", name, got, want)
		}
	}

	plain := write("a.tar", []byte("a:1,a:2"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("b:1"))
	zw.Close()
	gzPath := write("b.tar.gz", gz.Bytes())
	var zst bytes.Buffer
	enc, _ := zstd.NewWriter(&zst)
	enc.Write([]byte("c:1"))
	enc.Close()
	zstPath := write("c.tar.zst", zst.Bytes())
	write("notes.txt", []byte("bad: not an archive name"))
	step("first", "builtin:pause:1", plain, gzPath, zstPath)
	if got := im.Images(); !reflect.DeepEqual(got, []string{"a:1", "a:2", "b:1", "c:1", "pause:1"}) {
		t.Errorf("Images() = %q", got)
	}

	step("unchanged")
	// A new importer reads the state file: nothing is imported again.
	im = newImporter()
	step("restart")

	// Touched without a change: the hash matches, no import.
	later := time.Now().Add(time.Minute)
	os.Chtimes(plain, later, later)
	step("touched")

	// Changed content: imported again.
	write("a.tar", []byte("a:3"))
	step("changed", plain)

	// Images gone from the store: imported again.
	delete(store.images, "b:1")
	delete(store.images, "pause:1")
	step("removed from the store", "builtin:pause:1", gzPath)

	// A bad archive fails once and is not retried until it changes.
	bad := write("bad.tar", []byte("bad"))
	if _, err := im.Sync(ctx); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad archive: %v", err)
	}
	n := len(store.imports)
	step("bad, unchanged")
	if len(store.imports) != n {
		t.Error("an unchanged bad archive was read again")
	}
	write("bad.tar", []byte("d:1"))
	os.Chtimes(bad, later, later)
	step("bad, fixed", bad)

	// A file still being written waits for the next poll.
	im.Settle = time.Hour
	write("e.tar", []byte("e:1"))
	step("settling")
	im.Settle = 0
	step("settled", filepath.Join(images, "e.tar"))
}

func TestImporterFailsWithoutItsBuiltins(t *testing.T) {
	store := &fakeStore{images: map[string]bool{}}
	im := NewImporter(store, t.TempDir(), filepath.Join(t.TempDir(), "s.json"),
		[]Builtin{{Name: "pause:1", Write: func(w io.Writer) error { return errors.New("no pause for this arch") }}}, nil)
	if err := im.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no pause for this arch") {
		t.Fatalf("Start = %v", err)
	}
}

func TestImporterIsReadyOnceTheBuiltinsAreIn(t *testing.T) {
	store := &fakeStore{images: map[string]bool{}, down: true}
	im := NewImporter(store, t.TempDir(), filepath.Join(t.TempDir(), "s.json"),
		[]Builtin{{Name: "pause:1", Write: func(w io.Writer) error { _, err := io.WriteString(w, "pause:1"); return err }}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- im.Start(ctx) }()
	select {
	case <-im.Ready():
		t.Fatal("ready while the store is down")
	case err := <-done:
		t.Fatalf("Start gave up while the store is down: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	select {
	case <-im.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready after the store came back")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v after its context ended", err)
	}
	if got := im.Images(); len(got) != 1 || got[0] != "pause:1" {
		t.Errorf("Images() = %q", got)
	}
}
