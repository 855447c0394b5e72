package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicReplacesWithMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	info, _ := os.Stat(path)
	if err != nil || string(data) != "new" || info.Mode().Perm() != 0o600 {
		t.Errorf("after WriteFileAtomic: %q, %v, mode %v; want \"new\", mode 0600", data, err, info.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := WriteFileAtomic(filepath.Join(path, "missing", "g"), nil, 0o600); err == nil {
		t.Error("WriteFileAtomic into a missing directory: no error")
	}
}

func TestSymlinkAtomic(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "current")
	for _, target := range []string{"a", "a", "b"} {
		if err := SymlinkAtomic(target, link); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(link); err != nil || got != target {
			t.Fatalf("link -> %q, %v; want %q", got, err, target)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d entries, want only the link", len(entries))
	}
}
