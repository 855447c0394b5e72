package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The layout of a volume the kubelet writes (configMap, secret,
// downwardAPI, projected), as upstream's AtomicWriter makes it:
//
//	<dir>/..2026_11_30_10_00_00.123456/  the files (a new directory per change)
//	<dir>/..data -> ..2026_11_30_10_00_00.123456
//	<dir>/key -> ..data/key              one symlink per top-level path
//
// A change is a new timestamped directory and one rename of ..data, so a
// reader resolving ..data sees either the old set of files or the new.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	maxFileNameLen = 255
	maxPathLen     = 4096
)

// fileProjection is one file of a volume's payload.
type fileProjection struct {
	Data []byte
	Mode int32
}

// writeAtomic makes dir hold exactly payload (paths relative to dir).
// It writes nothing when the files already have that content (modes are
// not compared: fsGroup changes them); otherwise it writes a new
// timestamped directory, calls setPerms on dir, and switches ..data over.
// It tells whether it wrote.
func (m *Manager) writeAtomic(dir string, payload map[string]fileProjection, setPerms func()) (bool, error) {
	clean := make(map[string]fileProjection, len(payload))
	for p, f := range payload {
		if err := validatePath(p); err != nil {
			return false, err
		}
		clean[filepath.Clean(p)] = f
	}
	dataDir := filepath.Join(dir, dataDirName)
	oldTs, err := os.Readlink(dataDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if oldTs != "" && (filepath.Base(oldTs) != oldTs || !strings.HasPrefix(oldTs, "..")) {
		return false, fmt.Errorf("%s points to %q, not to a data directory of the volume", dataDir, oldTs)
	}
	var stale []string
	if oldTs != "" {
		oldPath := filepath.Join(dir, oldTs)
		stale, err = pathsToRemove(clean, oldPath)
		if err != nil {
			return false, err
		}
		differs, err := payloadDiffers(clean, oldPath)
		if err != nil {
			return false, err
		}
		if !differs && len(stale) == 0 {
			// Still make any missing visible symlink (e.g. after a crash).
			return false, createVisible(clean, dir)
		}
	}
	tsDir, err := os.MkdirTemp(dir, m.Clock.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := writePayload(clean, tsDir); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if setPerms != nil {
		setPerms()
	}
	tmp := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Symlink(filepath.Base(tsDir), tmp); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmp, dataDir); err != nil {
		os.Remove(tmp)
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := createVisible(clean, dir); err != nil {
		return true, err
	}
	var errs []error
	for _, p := range stale {
		if !strings.Contains(p, "/") {
			if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	// The old data directory, and any left by an interrupted write.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() && strings.HasPrefix(n, "..") && n != filepath.Base(tsDir) && n != dataDirName && n != newDataDirName {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return true, errors.Join(errs...)
}

// validatePath is upstream's check of a payload path: relative, no '..'
// element, not starting with '..', names of at most 255 bytes.
func validatePath(p string) error {
	if p == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", p)
	}
	if filepath.IsAbs(p) {
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	}
	if len(p) > maxPathLen {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLen)
	}
	items := strings.Split(p, "/")
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(item) > maxFileNameLen {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLen)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// payloadDiffers tells whether a file of payload is missing from oldDir
// or has other content there.
func payloadDiffers(payload map[string]fileProjection, oldDir string) (bool, error) {
	for p, f := range payload {
		data, err := os.ReadFile(filepath.Join(oldDir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, f.Data) {
			return true, nil
		}
	}
	return false, nil
}

// pathsToRemove are the paths (files and directories, relative) in
// oldDir that payload no longer has.
func pathsToRemove(payload map[string]fileProjection, oldDir string) ([]string, error) {
	keep := map[string]bool{}
	for p := range payload {
		for ; p != "." && p != "/"; p = filepath.Dir(p) {
			keep[p] = true
		}
	}
	var out []string
	err := filepath.WalkDir(oldDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oldDir, path)
		if rel != "." && !keep[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

func writePayload(payload map[string]fileProjection, dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o777); err != nil {
			return err
		}
		mode := os.FileMode(f.Mode) & os.ModePerm
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return err
		}
		if err := os.Chmod(full, mode); err != nil {
			return err
		}
	}
	return nil
}

// createVisible makes the symlink <dir>/<top> -> ..data/<top> for every
// top-level path of payload that has nothing there yet.
func createVisible(payload map[string]fileProjection, dir string) error {
	for p := range payload {
		top, _, _ := strings.Cut(p, "/")
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return err
		}
	}
	return nil
}
