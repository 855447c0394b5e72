package volumes

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// Group permission bits given to volume contents for fsGroup, as
// upstream's SetVolumeOwnership: read-write (read-only for volumes the
// kubelet writes: configMap, secret, projected, downwardAPI), execute
// and setgid on directories.
const (
	rwMask   os.FileMode = 0o660
	roMask   os.FileMode = 0o440
	execMask os.FileMode = 0o110
)

func fsGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

func fsGroupChangePolicy(pod *corev1.Pod) *corev1.PodFSGroupChangePolicy {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroupChangePolicy
}

// changeOwnership gives everything below dir (dir included, symlinks not
// followed) to group gid and adds the group's permissions. Failures are
// logged, not returned, as upstream.
func changeOwnership(log *slog.Logger, dir string, gid *int64, readOnly bool) {
	changeOwnershipPolicy(log, dir, gid, readOnly, nil)
}

// changeOwnershipPolicy is changeOwnership honouring the pod's
// fsGroupChangePolicy: OnRootMismatch skips the walk when dir already
// has the group and its permissions.
func changeOwnershipPolicy(log *slog.Logger, dir string, gid *int64, readOnly bool, policy *corev1.PodFSGroupChangePolicy) {
	if gid == nil {
		return
	}
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch && !needsOwnershipChange(dir, *gid, readOnly) {
		return
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	// Children before their directory, as upstream walks.
	var paths []string
	var infos []fs.FileInfo
	_ = filepath.Walk(dir, func(path string, info fs.FileInfo, err error) error {
		if err != nil {
			log.Warn("fsGroup: cannot walk volume", "path", path, "err", err)
			return nil
		}
		paths = append(paths, path)
		infos = append(infos, info)
		return nil
	})
	for i := len(paths) - 1; i >= 0; i-- {
		path, info := paths[i], infos[i]
		if err := os.Lchown(path, -1, int(*gid)); err != nil {
			log.Warn("fsGroup: lchown failed", "path", path, "err", err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			continue
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | execMask
		}
		if err := os.Chmod(path, info.Mode()|m); err != nil {
			log.Warn("fsGroup: chmod failed", "path", path, "err", err)
		}
	}
}

// needsOwnershipChange is upstream's requiresPermissionChange: the root
// of the volume lacks the group, the group's permissions or setgid.
func needsOwnershipChange(dir string, gid int64, readOnly bool) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid || !fi.IsDir() {
		return true
	}
	want := rwMask | execMask
	if readOnly {
		want = roMask | execMask
	}
	return fi.Mode().Perm()&want != want || fi.Mode()&os.ModeSetgid == 0
}
