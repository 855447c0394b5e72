package etcdsnapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// ErrChecksum is wrapped by every error about a missing or wrong .sha256.
var ErrChecksum = errors.New("snapshot checksum")

// Verify checks that path matches the digest in path.sha256 and that it is
// an etcd snapshot whose database passes bbolt's consistency check. (etcd's
// own hash at the end of the file is checked again by Restore.)
func Verify(path string) error {
	want, err := readChecksum(path)
	if err != nil {
		return err
	}
	got, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("verify snapshot: %w", err)
	}
	if got != want {
		return fmt.Errorf("%w: %q has sha256 %s but %q says %s: the file is damaged or is not the one the checksum was written for; refusing it",
			ErrChecksum, path, got, path+checksumExt, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("verify snapshot: %w", err)
	}
	if !hasEtcdHash(info.Size()) {
		return fmt.Errorf("verify snapshot: %q (%d bytes) does not end with etcd's own sha256, so it is not a snapshot taken by orch etcd-snapshot or etcdctl snapshot save", path, info.Size())
	}
	if _, err := snapshot.NewV3(zap.NewNop()).Status(path); err != nil {
		return fmt.Errorf("verify snapshot: %q is not a valid etcd snapshot: %w", path, err)
	}
	return nil
}

// readChecksum returns the hex digest in path.sha256.
func readChecksum(path string) (string, error) {
	sumPath := path + checksumExt
	data, err := os.ReadFile(sumPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %q is missing, so %q cannot be checked; refusing it (write one with `sha256sum %s > %s` only if you trust the file)",
			ErrChecksum, sumPath, path, filepath.Base(path), filepath.Base(sumPath))
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrChecksum, err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 || len(fields[0]) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %q is not in sha256sum format (<64 hex digits>  <file name>)", ErrChecksum, sumPath)
	}
	if _, err := hex.DecodeString(fields[0]); err != nil {
		return "", fmt.Errorf("%w: %q is not in sha256sum format (<64 hex digits>  <file name>)", ErrChecksum, sumPath)
	}
	return strings.ToLower(fields[0]), nil
}

// writeChecksum writes path.sha256 in sha256sum format, atomically.
func writeChecksum(path, sum string) error {
	sumPath := path + checksumExt
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(sumPath)+".part-*")
	if err != nil {
		return fmt.Errorf("write %q: %w", sumPath, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := fmt.Fprintf(tmp, "%s  %s\n", sum, filepath.Base(path)); err != nil {
		return fmt.Errorf("write %q: %w", sumPath, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %q: %w", sumPath, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", sumPath, err)
	}
	if err := os.Rename(tmp.Name(), sumPath); err != nil {
		return fmt.Errorf("write %q: %w", sumPath, err)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
