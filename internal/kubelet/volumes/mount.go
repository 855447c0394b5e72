package volumes

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// mountInfoPath lists the mounts of the kubelet's mount namespace.
const mountInfoPath = "/proc/self/mountinfo"

// noSwapState remembers whether tmpfs takes the noswap option (Linux
// 6.4 and later, not in a user namespace): 0 unknown, 1 yes, 2 no.
type noSwapState struct{ v atomic.Int32 }

// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default, half
// of the memory) on dir, which exists. Like upstream's kubelet it keeps
// the tmpfs out of swap where the kernel can.
func (m *Manager) mountTmpfs(dir string, size int64) error {
	var opts []string
	if size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(size, 10))
	}
	if m.noSwap.v.Load() != 2 {
		err := unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(append(slices.Clone(opts), "noswap"), ","))
		if err == nil {
			m.noSwap.v.Store(1)
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || m.noSwap.v.Load() == 1 {
			return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
		}
		m.noSwap.v.Store(2)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(opts, ",")); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// isMountPoint tells whether dir is the root of a mount other than its
// parent's (enough for the tmpfs mounts this package makes). A missing
// dir is not a mount point.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev || st.Ino == parent.Ino, nil
}

// mountsUnder are the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open(mountInfoPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		mp, ok := mountPoint(sc.Text())
		if ok && (mp == dir || strings.HasPrefix(mp, dir+"/")) {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// mountPoint is the mount point (5th field, octal escapes undone) of a
// line of /proc/<pid>/mountinfo.
func mountPoint(line string) (string, bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return "", false
	}
	return unescapeOctal(fields[4]), true
}

// unescapeOctal undoes the \NNN escapes the kernel writes for space, tab,
// newline and backslash in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			n, _ := strconv.ParseUint(s[i+1:i+4], 8, 8)
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// unmountAll unmounts every mount at or below dir, deepest first, lazily
// when a mount is busy. It fails if any remains.
func unmountAll(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for range 8 {
		mps, err := mountsUnder(real)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			err := unix.Unmount(mp, 0)
			if errors.Is(err, unix.EBUSY) {
				err = unix.Unmount(mp, unix.MNT_DETACH)
			}
			if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	return fmt.Errorf("%s is still mounted after unmounting", real)
}
