package etcdsnapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// List returns the snapshots in dir, oldest first (ties by name). A
// directory that does not exist holds none.
func List(dir string) ([]Snapshot, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %q: %w", dir, err)
	}
	var out []Snapshot
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !isSnapshotName(name) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list snapshots in %q: %w", dir, err)
		}
		s := Snapshot{Name: name, Path: filepath.Join(dir, name), Size: info.Size(), CreatedAt: info.ModTime()}
		if t, ok := createdAt(name); ok {
			s.CreatedAt = t
		}
		if sum, err := readChecksum(s.Path); err == nil {
			s.SHA256 = sum
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func isSnapshotName(name string) bool {
	return strings.HasSuffix(name, ext) && !strings.HasPrefix(name, ".")
}

// Delete removes the named snapshots (names as List gives them; the .db may
// be left off) and their .sha256 files. If any name is unknown it removes
// nothing and says which.
func Delete(dir string, names ...string) error {
	if len(names) == 0 {
		return errors.New("delete snapshots: no snapshot named (see `orch etcd-snapshot ls`)")
	}
	paths := make([]string, 0, len(names))
	var unknown []string
	for _, name := range names {
		if !strings.HasSuffix(name, ext) {
			name += ext
		}
		path := filepath.Join(dir, name)
		info, err := os.Lstat(path)
		if name != filepath.Base(name) || !isSnapshotName(name) || err != nil || !info.Mode().IsRegular() {
			unknown = append(unknown, fmt.Sprintf("%q", strings.TrimSuffix(name, ext)+ext))
			continue
		}
		paths = append(paths, path)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("delete snapshots: no snapshot %s in %q (see `orch etcd-snapshot ls`); nothing deleted", strings.Join(unknown, ", "), dir)
	}
	for _, path := range paths {
		if err := remove(path); err != nil {
			return err
		}
	}
	return nil
}

// Prune deletes the snapshots whose names start with prefix+"-", except the
// newest retain of them, and returns those it deleted.
func Prune(dir, prefix string, retain int) ([]Snapshot, error) {
	if retain < 0 {
		return nil, fmt.Errorf("prune snapshots: cannot retain %d snapshots", retain)
	}
	all, err := List(dir)
	if err != nil {
		return nil, err
	}
	var matching []Snapshot
	for _, s := range all {
		if strings.HasPrefix(s.Name, prefix+"-") {
			matching = append(matching, s)
		}
	}
	if len(matching) <= retain {
		return nil, nil
	}
	doomed := matching[:len(matching)-retain] // List is oldest first
	for i, s := range doomed {
		if err := remove(s.Path); err != nil {
			return doomed[:i], err
		}
	}
	return doomed, nil
}

// remove deletes a snapshot and its checksum file.
func remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	if err := os.Remove(path + checksumExt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	return nil
}
