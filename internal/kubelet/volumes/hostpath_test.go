package volumes

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/podconfig"
)

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	block := filepath.Join(dir, "block")
	haveBlock := unix.Mknod(block, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))) == nil
	missing := filepath.Join(dir, "missing")

	for _, tc := range []struct {
		name string
		path string
		typ  corev1.HostPathType
		want string // error text; "" for none
	}{
		{"unset on missing path", missing, corev1.HostPathUnset, ""},
		{"directory", dir, corev1.HostPathDirectory, ""},
		{"directory on file", file, corev1.HostPathDirectory, "hostPath type check failed: " + file + " is not a directory, it's a File"},
		{"directory missing", missing, corev1.HostPathDirectory, "hostPath type check failed, " + missing + " is not a directory, unable to determine its type: path \"" + missing + "\" does not exist"},
		{"directoryOrCreate on file", file, corev1.HostPathDirectoryOrCreate, "hostPath type check failed: " + file + " is not a directory, it's a File"},
		{"file", file, corev1.HostPathFile, ""},
		{"file on directory", dir, corev1.HostPathFile, "hostPath type check failed: " + dir + " is not a file, it's a Directory"},
		{"fileOrCreate on directory", dir, corev1.HostPathFileOrCreate, "hostPath type check failed: " + dir + " is not a file, it's a Directory"},
		{"fileOrCreate without parent", filepath.Join(missing, "f"), corev1.HostPathFileOrCreate, "no such file or directory"},
		{"socket", sock, corev1.HostPathSocket, ""},
		{"socket on file", file, corev1.HostPathSocket, "hostPath type check failed: " + file + " is not a socket file, it's a File"},
		{"char device", "/dev/null", corev1.HostPathCharDev, ""},
		{"char device on socket", sock, corev1.HostPathCharDev, "hostPath type check failed: " + sock + " is not a character device, it's a Socket"},
		{"block device on char device", "/dev/null", corev1.HostPathBlockDev, "hostPath type check failed: /dev/null is not a block device, it's a CharDevice"},
		{"backsteps", dir + "/../x", corev1.HostPathUnset, "invalid HostPath `" + dir + "/../x`: must not contain '..'"},
		{"invalid type", dir, "Weird", "Weird is an invalid volume type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkHostPath(tc.path, &tc.typ)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
	if haveBlock {
		typ := corev1.HostPathBlockDev
		if err := checkHostPath(block, &typ); err != nil {
			t.Errorf("block device: %v", err)
		}
	}
}

func TestHostPathCreate(t *testing.T) {
	dir := t.TempDir()
	m, _, _ := newManager(t)
	newDir := filepath.Join(dir, "a", "b")
	newFile := filepath.Join(dir, "f")
	pod := testPod(
		vol("d", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: newDir, Type: ptr(corev1.HostPathDirectoryOrCreate)}}),
		vol("f", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: newFile, Type: ptr(corev1.HostPathFileOrCreate)}}),
	)
	old := unix.Umask(0)
	defer unix.Umask(old)
	vols := mustSetup(t, m, pod)
	if vols["d"].HostPath != newDir || vols["f"].HostPath != newFile {
		t.Errorf("volumes = %+v", vols)
	}
	if mode := fileMode(t, newDir); !mode.IsDir() || mode.Perm() != 0o755 {
		t.Errorf("directory mode = %v, want drwxr-xr-x", mode)
	}
	if mode := fileMode(t, newFile); !mode.IsRegular() || mode.Perm() != 0o644 {
		t.Errorf("file mode = %v, want -rw-r--r--", mode)
	}
	// Again: they exist now and have the right types.
	mustSetup(t, m, pod)
}

func TestHostPathMountError(t *testing.T) {
	m, _, _ := newManager(t)
	pod := testPod(vol("d", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/null", Type: ptr(corev1.HostPathDirectory)}}))
	err := setupError(t, m, pod)
	want := `MountVolume.SetUp failed for volume "d" : hostPath type check failed: /dev/null is not a directory, it's a CharDevice`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrMountFailed) || !errors.Is(err, ErrHostPathType) || errors.Is(err, podconfig.ErrUnsupported) {
		t.Errorf("error %v wraps the wrong sentinels", err)
	}
}
