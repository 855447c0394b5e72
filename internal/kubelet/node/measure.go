package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is where the pressure signals are read, as upstream's eviction
// manager reads them (through cadvisor). Its paths are fields so that
// tests point them at files in a temporary directory.
type Machine struct {
	Proc   string // /proc
	Cgroup string // /sys/fs/cgroup
	// NodeFs is the kubelet's root dir (nodefs); ImageFs the container
	// runtime's root dir (imagefs), not measured when empty. A dir that
	// does not exist yet is measured by its nearest existing parent.
	NodeFs, ImageFs string
	// Statfs reads a file system's size and use (StatFS when nil).
	Statfs func(path string) (FsStats, error)
}

// FsStats is a file system's size and what is left of it for
// unprivileged users.
type FsStats struct {
	Bytes, AvailableBytes, Inodes, FreeInodes int64
}

// StatFS is statfs(2) of path.
func StatFS(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, err
	}
	return FsStats{
		Bytes: int64(st.Blocks) * int64(st.Bsize), AvailableBytes: int64(st.Bavail) * int64(st.Bsize),
		Inodes: int64(st.Files), FreeInodes: int64(st.Ffree),
	}, nil
}

// HostMachine is this machine, its nodefs and imagefs being the given dirs.
func HostMachine(nodeFs, imageFs string) Machine {
	return Machine{Proc: "/proc", Cgroup: "/sys/fs/cgroup", NodeFs: nodeFs, ImageFs: imageFs}
}

// Measure measures every signal it can; the error says which it could not.
//   - memory.available: MemTotal less the root cgroup's working set (usage
//     less inactive file pages: cgroup v1 memory.usage_in_bytes and
//     total_inactive_file; cgroup v2 memory.current, or MemTotal-MemFree
//     for a root cgroup without it as runc reports, and inactive_file),
//     or MemAvailable of /proc/meminfo when no cgroup says.
//   - nodefs.* and imagefs.*: statfs of NodeFs and ImageFs.
//   - pid.available: the smaller of kernel.pid_max and kernel.threads-max,
//     less the tasks that exist (/proc/loadavg).
func (m Machine) Measure() (Observations, error) {
	obs := Observations{}
	var errs []error
	if o, err := m.memory(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", SignalMemoryAvailable, err))
	} else {
		obs[SignalMemoryAvailable] = o
	}
	for _, f := range []struct {
		name, dir     string
		bytes, inodes Signal
	}{
		{"nodefs", m.NodeFs, SignalNodeFsAvailable, SignalNodeFsInodesFree},
		{"imagefs", m.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree},
	} {
		if f.dir == "" {
			continue
		}
		st, err := m.statfs(f.dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		obs[f.bytes] = Observation{Available: st.AvailableBytes, Capacity: st.Bytes}
		if st.Inodes > 0 { // some file systems (btrfs) report no inodes
			obs[f.inodes] = Observation{Available: st.FreeInodes, Capacity: st.Inodes}
		}
	}
	if o, err := m.pids(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", SignalPIDAvailable, err))
	} else {
		obs[SignalPIDAvailable] = o
	}
	return obs, errors.Join(errs...)
}

// statfs measures the file system of dir or, while dir does not exist,
// of its nearest existing parent.
func (m Machine) statfs(dir string) (FsStats, error) {
	statfs := m.Statfs
	if statfs == nil {
		statfs = StatFS
	}
	for {
		st, err := statfs(dir)
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return st, err
		}
		dir = parent
	}
}

// memory is memory.available: capacity less the working set.
func (m Machine) memory() (Observation, error) {
	meminfo, err := os.ReadFile(filepath.Join(m.Proc, "meminfo"))
	if err != nil {
		return Observation{}, err
	}
	total, err := meminfoBytes(meminfo, "MemTotal")
	if err != nil {
		return Observation{}, err
	}
	ws, err := m.workingSet(meminfo, total)
	if err != nil {
		avail, err2 := meminfoBytes(meminfo, "MemAvailable")
		if err2 != nil {
			return Observation{}, errors.Join(err, err2)
		}
		return Observation{Available: avail, Capacity: total}, nil
	}
	return Observation{Available: max(total-ws, 0), Capacity: total}, nil
}

// workingSet is the root cgroup's memory usage less its inactive file
// pages (cadvisor's working set), from cgroup v1 or else v2.
func (m Machine) workingSet(meminfo []byte, total int64) (int64, error) {
	v1 := filepath.Join(m.Cgroup, "memory")
	if usage, err := readInt(filepath.Join(v1, "memory.usage_in_bytes")); err == nil {
		inactive, err := statField(filepath.Join(v1, "memory.stat"), "total_inactive_file")
		if err != nil {
			return 0, err
		}
		return max(usage-inactive, 0), nil
	}
	inactive, err := statField(filepath.Join(m.Cgroup, "memory.stat"), "inactive_file")
	if err != nil {
		return 0, err
	}
	usage, err := readInt(filepath.Join(m.Cgroup, "memory.current"))
	if errors.Is(err, fs.ErrNotExist) {
		// The root cgroup of v2 has no memory.current.
		var free int64
		free, err = meminfoBytes(meminfo, "MemFree")
		usage = total - free
	}
	if err != nil {
		return 0, err
	}
	return max(usage-inactive, 0), nil
}

// pids is pid.available: the kernel's task limit less the tasks.
func (m Machine) pids() (Observation, error) {
	limit, err := readInt(filepath.Join(m.Proc, "sys/kernel/pid_max"))
	if err != nil {
		return Observation{}, err
	}
	if threads, err := readInt(filepath.Join(m.Proc, "sys/kernel/threads-max")); err == nil && threads < limit {
		limit = threads
	}
	// /proc/loadavg: "0.25 0.22 0.62 1/87 22442", 87 tasks.
	data, err := os.ReadFile(filepath.Join(m.Proc, "loadavg"))
	if err != nil {
		return Observation{}, err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 4 {
		return Observation{}, fmt.Errorf("/proc/loadavg %q has no task count", data)
	}
	_, n, _ := strings.Cut(fields[3], "/")
	tasks, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return Observation{}, fmt.Errorf("/proc/loadavg %q has no task count", data)
	}
	return Observation{Available: limit - tasks, Capacity: limit}, nil
}

// meminfoBytes is a field of /proc/meminfo (in kB there) in bytes.
func meminfoBytes(meminfo []byte, field string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field+":" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %s %q: %w", field, fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", field)
}

// statField is a field of a cgroup's memory.stat ("name value" lines).
func statField(path, name string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", path, name)
}

// readInt reads a file holding one integer.
func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}
