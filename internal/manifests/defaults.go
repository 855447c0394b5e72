package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteDefaults writes orch's built-in manifests (the top-level *.yaml,
// *.yml and *.json files of defaults) into dir, so the Applier applies
// them. A file is written when it is missing or differs from the built-in
// one, unless NAME.skip exists beside it (e.g. local-storage.yaml.skip):
// then the file is the user's, left alone (and the Applier skips it). A
// default whose name without the extension is in disabled (--disable
// NAME) is not written, and removed from dir if it is there; the objects
// it created stay in the cluster.
func WriteDefaults(defaults fs.FS, dir string, disabled []string) error {
	entries, err := fs.ReadDir(defaults, ".")
	if err != nil {
		return fmt.Errorf("read the built-in manifests: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the manifests directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !isManifest(name, nil) {
			continue
		}
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(path + ".skip"); err == nil {
			continue
		}
		if slices.Contains(disabled, strings.TrimSuffix(name, filepath.Ext(name))) {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove the disabled manifest: %w", err))
			}
			continue
		}
		want, err := fs.ReadFile(defaults, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read the built-in manifest %q: %w", name, err))
			continue
		}
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := writeAtomic(path, want); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeAtomic replaces path with data through a hidden temporary file, so
// the Applier never reads half a file (it ignores hidden files).
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write manifest %s: %w", path, err)
	}
	return nil
}
