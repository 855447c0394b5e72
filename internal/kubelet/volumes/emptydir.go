package volumes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/kubelet/podconfig"
)

// emptyDirPerm is the mode of an emptyDir (and of the directory under a
// wrapped tmpfs), as upstream.
const emptyDirPerm os.FileMode = 0o777

// emptyDir makes a directory, or for medium Memory a tmpfs, once; on
// later syncs it only checks that it is still there. fsGroup ownership
// is applied when it is made.
func (s *setup) emptyDir(name string, src *corev1.EmptyDirVolumeSource) (podconfig.Volume, error) {
	dir := s.m.VolumeDir(s.pod.UID, PluginEmptyDir, name)
	ready := s.m.readyFile(s.pod.UID, PluginEmptyDir, name)
	_, readyErr := os.Stat(ready)
	switch {
	case src.Medium == corev1.StorageMediumDefault:
		if readyErr == nil && isDir(dir) {
			return podconfig.Volume{HostPath: dir}, nil
		}
		if err := setupDir(dir); err != nil {
			return podconfig.Volume{}, err
		}
	case src.Medium == corev1.StorageMediumMemory:
		mounted, err := isMountPoint(dir)
		if err != nil {
			return podconfig.Volume{}, err
		}
		if mounted && readyErr == nil {
			return podconfig.Volume{HostPath: dir}, nil
		}
		if !mounted {
			if err := setupDir(dir); err != nil {
				return podconfig.Volume{}, err
			}
			if err := s.m.mountTmpfs(dir, s.m.tmpfsSize(s.pod, src.SizeLimit)); err != nil {
				return podconfig.Volume{}, err
			}
			s.log.Debug("mounted tmpfs", "volume", name, "dir", dir)
		}
	case strings.HasPrefix(string(src.Medium), string(corev1.StorageMediumHugePages)):
		return podconfig.Volume{}, fmt.Errorf("emptyDir volumes of medium %s are %w", src.Medium, podconfig.ErrUnsupported)
	default:
		return podconfig.Volume{}, fmt.Errorf("unknown storage medium %q", src.Medium)
	}
	changeOwnership(s.log, dir, fsGroup(s.pod), false)
	if err := markReady(ready); err != nil {
		return podconfig.Volume{}, err
	}
	return podconfig.Volume{HostPath: dir}, nil
}

// readyFile marks a volume as set up (so fsGroup ownership is applied
// once): <pod dir>/plugins/<plugin>/<name>/ready, as upstream.
func (m *Manager) readyFile(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "plugins", plugin, name, "ready")
}

func markReady(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return os.WriteFile(path, nil, 0o600)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// setupDir makes dir with mode 0777 whatever the umask.
func setupDir(dir string) error {
	if err := os.MkdirAll(dir, emptyDirPerm); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != emptyDirPerm {
		return os.Chmod(dir, emptyDirPerm)
	}
	return nil
}

// tmpfsSize is the size of a memory-backed volume, as upstream: the
// node's allocatable memory, or the pod's memory limit when it is less,
// or sizeLimit when it is less still; 0 (the kernel's default) when
// none is known.
func (m *Manager) tmpfsSize(pod *corev1.Pod, sizeLimit *resource.Quantity) int64 {
	var size int64
	if q, ok := m.Allocatable[corev1.ResourceMemory]; ok && q.Value() > 0 {
		size = q.Value()
	}
	if l := podMemoryLimit(pod); l > 0 && (size == 0 || l <= size) {
		size = l
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && (size == 0 || sizeLimit.Value() <= size) {
		size = sizeLimit.Value()
	}
	return size
}

// podMemoryLimit is the memory limit of the pod's cgroup: the pod-level
// limit, or, when every container has a limit, what the containers need
// at the most at once plus the overhead; 0 for none.
func podMemoryLimit(pod *corev1.Pod) int64 {
	if pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Limits[corev1.ResourceMemory]; ok && !q.IsZero() {
			return q.Value()
		}
	}
	limit := func(c *corev1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		return q.Value(), ok && !q.IsZero()
	}
	var running, sidecars, initPeak int64
	for i := range pod.Spec.Containers {
		v, ok := limit(&pod.Spec.Containers[i])
		if !ok {
			return 0
		}
		running += v
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		v, ok := limit(c)
		if !ok {
			return 0
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running += v
			sidecars += v
			v = sidecars
		} else {
			v += sidecars
		}
		initPeak = max(initPeak, v)
	}
	total := max(running, initPeak)
	if q, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok {
		total += q.Value()
	}
	return total
}

// OverSizeLimit measures the disk-backed emptyDir volumes of pod that
// have a sizeLimit and reports the first one whose usage (bytes of
// blocks, as du counts them) is over its limit, for the caller to evict
// the pod. Memory-backed ones are bounded by their tmpfs size instead.
func (m *Manager) OverSizeLimit(pod *corev1.Pod) (volumeName string, used, limit int64, over bool) {
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium == corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		used := diskUsage(m.VolumeDir(pod.UID, PluginEmptyDir, v.Name))
		if used > ed.SizeLimit.Value() {
			return v.Name, used, ed.SizeLimit.Value(), true
		}
	}
	return "", 0, 0, false
}

// diskUsage is the space the files below dir take on disk, counting
// hard-linked files once and staying on dir's file system (like
// du -s -x -B1). Files that vanish during the walk are skipped.
func diskUsage(dir string) int64 {
	root, err := os.Lstat(dir)
	if err != nil {
		return 0
	}
	dev := root.Sys().(*syscall.Stat_t).Dev
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: not counted
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Dev != dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total
}
