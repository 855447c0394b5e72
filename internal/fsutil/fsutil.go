// Package fsutil holds the small file-system helpers several packages share.
package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path through a temporary file in the same
// directory that is synced and renamed over path, so readers see the old or
// the new content, never part of it. The file gets exactly mode perm.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %q: %w (check that the directory exists and is writable)", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm.Perm()); err != nil {
		return fmt.Errorf("set mode of %q: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %q: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %q: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %q: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %q: %w", path, err)
	}
	return nil
}

// SymlinkAtomic makes link a symbolic link to target, replacing whatever
// link is through a rename, so that it always resolves to the old target
// or the new one. It does nothing when link already points at target.
func SymlinkAtomic(target, link string) error {
	if got, err := os.Readlink(link); err == nil && got == target {
		return nil
	}
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link %q: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %q: %w", link, err)
	}
	return nil
}
