package volumes

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/podconfig"
)

// hostPath checks (or makes) the host path as its type says; the volume
// is the path itself.
func (s *setup) hostPath(src *corev1.HostPathVolumeSource) (podconfig.Volume, error) {
	if err := checkHostPath(src.Path, src.Type); err != nil {
		return podconfig.Volume{}, err
	}
	return podconfig.Volume{HostPath: src.Path}, nil
}

// checkHostPath is upstream's hostPath SetUp: no '..' in the path, then
// the type check. DirectoryOrCreate makes the directory with its parents
// (0755); FileOrCreate makes an empty file (0644) whose parent must
// exist. An unset type checks nothing.
func checkHostPath(path string, typ *corev1.HostPathType) error {
	if slices.Contains(strings.Split(path, "/"), "..") {
		return podconfig.Invalidf("invalid HostPath `%s`: must not contain '..'", path)
	}
	if typ == nil || *typ == corev1.HostPathUnset {
		return nil
	}
	exists := func() bool { _, err := os.Stat(path); return err == nil }
	switch *typ {
	case corev1.HostPathDirectoryOrCreate:
		if !exists() {
			if err := os.MkdirAll(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			return nil
		}
		return typeMatches(path, corev1.HostPathDirectory, "directory")
	case corev1.HostPathDirectory:
		return typeMatches(path, corev1.HostPathDirectory, "directory")
	case corev1.HostPathFileOrCreate:
		if !exists() {
			f, err := os.OpenFile(path, os.O_CREATE, 0o644)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if f != nil {
				f.Close()
			}
			return nil
		}
		return typeMatches(path, corev1.HostPathFile, "file")
	case corev1.HostPathFile:
		return typeMatches(path, corev1.HostPathFile, "file")
	case corev1.HostPathSocket:
		return typeMatches(path, corev1.HostPathSocket, "socket file")
	case corev1.HostPathCharDev:
		return typeMatches(path, corev1.HostPathCharDev, "character device")
	case corev1.HostPathBlockDev:
		return typeMatches(path, corev1.HostPathBlockDev, "block device")
	}
	return podconfig.Invalidf("%s is an invalid volume type", *typ)
}

// ErrHostPathType is wrapped by the errors of hostPath type checks.
var ErrHostPathType = errors.New("hostPath type check failed")

func typeMatches(path string, want corev1.HostPathType, expected string) error {
	got, err := fileType(path)
	if err != nil {
		return fmt.Errorf("%w, %s is not a %s, unable to determine its type: %w", ErrHostPathType, path, expected, err)
	}
	if got != want {
		return fmt.Errorf("%w: %s is not a %s, it's a %s", ErrHostPathType, path, expected, got)
	}
	return nil
}

// fileType is the type of what path names (following symlinks) in the
// words of HostPathType.
func fileType(path string) (corev1.HostPathType, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", path)
	}
	if err != nil {
		return "", err
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		return corev1.HostPathDirectory, nil
	case mode.IsRegular():
		return corev1.HostPathFile, nil
	case mode&os.ModeSocket != 0:
		return corev1.HostPathSocket, nil
	case mode&os.ModeCharDevice != 0:
		return corev1.HostPathCharDev, nil
	case mode&os.ModeDevice != 0:
		return corev1.HostPathBlockDev, nil
	}
	return "", errors.New("only recognise file, directory, socket, block device and character device")
}
