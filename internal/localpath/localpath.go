// Package localpath is what orch's built-in local-path storage shares
// between its parts. The server's provisioner
// (internal/controller/localpath) makes a PersistentVolume for each claim of
// a StorageClass whose provisioner is Provisioner, on the node the claim's
// first pod was scheduled to: a local volume whose directory is
// ROOT/DirName(...), with that node's affinity. The kubelet makes the
// directory when a pod first uses the volume (Ensure). The agent's Cleaner
// removes the directory of a Delete-policy volume once it is released, then
// the PersistentVolume.
//
// A volume's size, its PersistentVolume's spec.capacity.storage, is
// enforced where the filesystem of its directory has project quotas
// enforced (ext4 with the quota and project features mounted with
// prjquota; XFS mounted with prjquota): the directory gets a project of its
// own, inherited by all that is made in it, whose hard block limit is the
// size. Ensure sets it, and the Cleaner follows a volume that grows. On any
// other filesystem the size is recorded only, which the agent logs once
// per filesystem. The decisions are in quota.go, the system calls in
// quota_linux.go.
package localpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/volume"
)

const (
	// Provisioner is the StorageClass provisioner orch serves itself.
	Provisioner = "orch.io/local-path"
	// Finalizer keeps a Delete-policy volume until the agent of its node
	// has removed its directory.
	Finalizer = "orch.io/local-path"
	// NodeLabel names the node a volume is on, so each agent watches only
	// its own volumes.
	NodeLabel = "orch.io/local-path-node"
	// PathParameter is the StorageClass parameter that puts a class's
	// volumes under another directory than --default-local-storage-path.
	PathParameter = "path"
	// dirMode lets a pod of any user write its volume, as k3s's
	// local-path provisioner does (the kubelet applies fsGroup on top).
	dirMode = 0o777
)

// DirName is the directory of volume pv for claim ns/claim, below its root:
// the volume's name first, so that no two volumes share one.
func DirName(pv, ns, claim string) string { return pv + "_" + ns + "_" + claim }

// ErrNotLocalPath is wrapped by Dir's errors.
var ErrNotLocalPath = errors.New("not a local-path volume")

// Dir returns the directory of pv, a volume Provisioner made: a local
// volume whose absolute, clean path ends in a directory named after the
// volume. Anything else is refused, so that no PersistentVolume an
// administrator wrote can point the agent at a directory of its own.
func Dir(pv *corev1.PersistentVolume) (string, error) {
	switch {
	case pv.Annotations[volume.AnnDynamicallyProvisioned] != Provisioner:
		return "", fmt.Errorf("volume %q: %w: provisioned by %q", pv.Name, ErrNotLocalPath, pv.Annotations[volume.AnnDynamicallyProvisioned])
	case pv.Spec.Local == nil:
		return "", fmt.Errorf("volume %q: %w: it is not a local volume", pv.Name, ErrNotLocalPath)
	}
	path := pv.Spec.Local.Path
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || !strings.HasPrefix(filepath.Base(path), pv.Name+"_") {
		return "", fmt.Errorf("volume %q: %w: its path %q is not an absolute, clean path to a directory named %s_…", pv.Name, ErrNotLocalPath, path, pv.Name)
	}
	return path, nil
}

// Ensure makes pv's directory when it is missing (a pod's first use, or
// after someone removed it), writable by any user, and holds it to pv's
// capacity where its filesystem enforces project quotas.
func Ensure(pv *corev1.PersistentVolume) error { return ensure(pv, quotas) }

func ensure(pv *corev1.PersistentVolume, q quotaSetter) error {
	dir, err := Dir(pv)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("make the directory of volume %q: %w", pv.Name, err)
		}
		// MkdirAll's mode is cut by the umask.
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("make the directory of volume %q: %w", pv.Name, err)
		}
	}
	if _, err := q.setQuota(dir, capacity(pv)); err != nil {
		return fmt.Errorf("hold volume %q to its capacity: %w", pv.Name, err)
	}
	return nil
}

// capacity is pv's spec.capacity.storage in bytes; 0 when it has none.
func capacity(pv *corev1.PersistentVolume) int64 {
	q, ok := pv.Spec.Capacity[corev1.ResourceStorage]
	if !ok {
		return 0
	}
	return max(q.Value(), 0)
}
