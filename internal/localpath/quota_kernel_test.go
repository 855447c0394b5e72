//go:build linux

package localpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestKernelQuotas holds a volume to its size on a real filesystem with
// project quotas: a small ext4 (and XFS, where mkfs.xfs is installed)
// image, loop-mounted with prjquota. Ensure limits a 1 MiB volume's
// directory (made before, with a file, below a storage root in a project
// of an administrator's: it gets a project of its own, and so does the
// file), into which a pod's process cannot write 2 MiB (ext4 says
// EDQUOT, "disk quota exceeded"; XFS says ENOSPC, "no space left on
// device", of a full project); the Cleaner follows
// the volume's growth to 4 MiB, after which they do; releasing the volume
// removes the directory and its limit. It needs root, loop devices, the
// mkfs and a kernel with quotas (ext4: CONFIG_QUOTA and CONFIG_QFMT_V2;
// XFS: CONFIG_XFS_QUOTA), and says which is missing when it skips.
func TestKernelQuotas(t *testing.T) {
	for _, tc := range []struct {
		fstype string
		mkfs   []string
		size   int64
		full   unix.Errno // what a write past the limit fails with
	}{
		// 256-byte inodes: ext4 keeps project IDs only in large inodes.
		{"ext4", []string{"mkfs.ext4", "-q", "-F", "-I", "256", "-O", "quota,project"}, 32 << 20, unix.EDQUOT},
		{"xfs", []string{"mkfs.xfs", "-q", "-f"}, 300 << 20, unix.ENOSPC}, // XFS's smallest
	} {
		t.Run(tc.fstype, func(t *testing.T) {
			mnt := mountImage(t, tc.fstype, tc.mkfs, tc.size, "prjquota")
			storage := filepath.Join(mnt, "storage")
			pv := localPV("pvc-k1", storage, "1Mi")
			dir := pv.Spec.Local.Path
			if err := os.Mkdir(storage, 0o755); err != nil {
				t.Fatal(err)
			}
			dev, _, err := deviceOf(storage)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := writeProject(storage, 42, dev); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := writeBytes(filepath.Join(dir, "old"), 256<<10); err != nil {
				t.Fatal(err)
			}
			if id, err := readProject(filepath.Join(dir, "old")); id != 42 || err != nil {
				t.Fatalf("a file below the storage root: project %d, %v; want 42", id, err)
			}
			if err := Ensure(pv); err != nil {
				t.Fatal(err)
			}
			id, err := readProject(dir)
			if err != nil || id < firstProjectID {
				t.Fatalf("the volume's project: %d, %v; want one of its own", id, err)
			}
			if old, err := readProject(filepath.Join(dir, "old")); old != id || err != nil {
				t.Errorf("the file made before: project %d, %v; want the volume's, %d", old, err, id)
			}
			fsys := filesystemOf(t, dir)
			waitLimit(t, fsys, id, 1<<20)
			if use, err := readQuota(fsys, id); use.space < 256<<10 || use.inodes != 2 || err != nil {
				t.Errorf("project %d: %+v, %v; want the directory and its file of 256 KiB", id, use, err)
			}
			err = writeUnprivileged(filepath.Join(dir, "big"), 2<<20)
			if !errors.Is(err, tc.full) {
				t.Fatalf("writing 2 MiB into a 1 MiB volume: %v, want %v", err, tc.full)
			}
			t.Logf("project %d, limit 1 MiB: writing 2 MiB: %v", id, err)
			if err := os.Remove(filepath.Join(dir, "big")); err != nil {
				t.Fatal(err)
			}

			// The server grows the volume; the node's Cleaner follows.
			client := fake.NewClientset(pv)
			c := NewCleaner(client, "n1", slog.New(slog.NewTextHandler(t.Output(), nil)))
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- c.Start(ctx) }()
			t.Cleanup(func() { cancel(); <-done; quotas.setLog(nil) }) // before the unmount
			pvs := client.CoreV1().PersistentVolumes()
			pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("4Mi")
			if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitLimit(t, fsys, id, 4<<20)
			if err := writeUnprivileged(filepath.Join(dir, "big"), 2<<20); err != nil {
				t.Fatalf("writing 2 MiB into the volume grown to 4 MiB: %v", err)
			}
			t.Logf("project %d, limit 4 MiB: writing 2 MiB: ok", id)

			// Released: the directory goes, and its limit first.
			pv.Finalizers = []string{Finalizer}
			pv.Status.Phase = corev1.VolumeReleased
			if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// XFS may free the blocks of removed files a little later.
			eventually(t, "the released volume's directory and project gone", func() (bool, string) {
				_, err := os.Stat(dir)
				use, qerr := readQuota(fsys, id)
				return errors.Is(err, fs.ErrNotExist) && qerr == nil && !use.taken(),
					fmt.Sprintf("directory: %v; project %d: %+v, %v", err, id, use, qerr)
			})
		})
	}

	// ext4 made for project quotas but mounted without prjquota counts
	// them and enforces nothing: the size stays recorded only.
	t.Run("ext4 without prjquota", func(t *testing.T) {
		mnt := mountImage(t, "ext4", []string{"mkfs.ext4", "-q", "-F", "-I", "256", "-O", "quota,project"}, 32<<20, "")
		var out bytes.Buffer
		q := &projectQuotas{known: map[string]bool{}, log: slog.New(slog.NewTextHandler(&out, nil))}
		dir := filepath.Join(mnt, "pvc-k2_app_data")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		enforced, err := q.setQuota(dir, 1<<20)
		if enforced || err != nil || !strings.Contains(out.String(), "project quotas are counted, not enforced: mount it with -o prjquota") {
			t.Errorf("setQuota = %v, %v, logged %q; want not enforced, and why", enforced, err, out.String())
		}
		if id, err := readProject(dir); id != 0 || err != nil {
			t.Errorf("the directory's project: %d, %v; want none", id, err)
		}
	})
}

// mountImage makes a file system of size bytes with mkfs (a command and
// its options, the image last) in a temporary directory and loop-mounts
// it with options; it is unmounted (lazily, so never left behind) when the
// test ends.
func mountImage(t *testing.T, fstype string, mkfs []string, size int64, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("not root: %s project quotas not tested (mounting a loop device needs root)", fstype)
	}
	if _, err := exec.LookPath(mkfs[0]); err != nil {
		t.Skipf("%s is not installed: %s project quotas not tested", mkfs[0], fstype)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("no loop devices (%v): %s project quotas not tested", err, fstype)
	}
	tmp := t.TempDir()
	img, mnt := filepath.Join(tmp, fstype+".img"), filepath.Join(tmp, "mnt")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], img)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(mkfs, " "), err, out)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-t", fstype, "-o", strings.TrimSuffix("loop,"+options, ","), img, mnt}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %s: %v: %s\nthe kernel has no loop device free or no %s quotas (ext4 needs CONFIG_QUOTA and CONFIG_QFMT_V2, XFS CONFIG_XFS_QUOTA): %s project quotas not tested%s",
			strings.Join(args, " "), err, bytes.TrimSpace(out), fstype, fstype, kernelSays(fstype))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount -l %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// kernelSays is the kernel log's last words on fstype, when it can be read.
func kernelSays(fstype string) string {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return ""
	}
	var said []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(strings.ToLower(line), strings.ToLower(fstype)) {
			said = append(said, strings.TrimSpace(line))
		}
	}
	if len(said) == 0 {
		return ""
	}
	return "; the kernel said: " + said[len(said)-1]
}

// filesystemOf is the filesystem dir is on, as setQuota finds it.
func filesystemOf(t *testing.T, dir string) filesystem {
	t.Helper()
	_, majMin, err := deviceOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := findMount(info, majMin)
	if !ok {
		t.Fatalf("no mount of %s (%s)", dir, majMin)
	}
	return filesystem{device: m.source, fstype: m.fstype}
}

// waitLimit waits until project id's block limit on fsys is limit bytes.
func waitLimit(t *testing.T, fsys filesystem, id uint32, limit uint64) {
	t.Helper()
	eventually(t, fmt.Sprintf("a limit of %d bytes", limit), func() (bool, string) {
		use, err := readQuota(fsys, id)
		return err == nil && use.limit == limit, fmt.Sprintf("project %d on %s: %+v, %v", id, fsys.device, use, err)
	})
}

// eventually waits up to 30 s for ok, which also says what it saw.
func eventually(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done, saw := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s: %s", what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeUnprivileged writes n bytes to a new file at path as a pod's
// process does: without CAP_SYS_RESOURCE, with which the kernel's generic
// quotas (ext4's) let a process past its hard limits (XFS's do not).
// Capabilities are a thread's: the write runs on a thread of its own that
// drops it, and that ends with it.
func writeUnprivileged(path string, n int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var caps [2]unix.CapUserData
		if err := unix.Capget(&hdr, &caps[0]); err != nil {
			errc <- err
			return
		}
		caps[unix.CAP_SYS_RESOURCE/32].Effective &^= 1 << (unix.CAP_SYS_RESOURCE % 32)
		if err := unix.Capset(&hdr, &caps[0]); err != nil {
			errc <- err
			return
		}
		errc <- writeBytes(path, n)
	}()
	return <-errc
}

// writeBytes writes n bytes to a new file at path and syncs it.
func writeBytes(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 64<<10)
	for n > 0 && err == nil {
		var w int
		w, err = f.Write(chunk[:min(n, len(chunk))])
		n -= w
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
