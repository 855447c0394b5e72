package node

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMachine is a Machine over files in a temporary directory: proc and
// cgroup hold the given files (path relative to them: content).
func fakeMachine(t *testing.T, proc, cgroup map[string]string) Machine {
	t.Helper()
	root := t.TempDir()
	m := Machine{Proc: filepath.Join(root, "proc"), Cgroup: filepath.Join(root, "cgroup")}
	for dir, files := range map[string]map[string]string{m.Proc: proc, m.Cgroup: cgroup} {
		for name, content := range files {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
	// meminfo: 4 GiB, 1 GiB free, 3 GiB available.
	meminfo = "MemTotal:        4194304 kB\nMemFree:         1048576 kB\nMemAvailable:    3145728 kB\nBuffers: 0 kB\n"
)

func procFiles(extra map[string]string) map[string]string {
	files := map[string]string{
		"meminfo":                meminfo,
		"sys/kernel/pid_max":     "32768\n",
		"sys/kernel/threads-max": "192730\n",
		"loadavg":                "0.25 0.22 0.62 1/87 22442\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// TestMeasureMemory: memory.available is MemTotal less the root cgroup's
// working set (usage less inactive file pages) on cgroup v1 and v2, and
// MemAvailable when no cgroup says.
func TestMeasureMemory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		proc   map[string]string
		cgroup map[string]string
		want   int64
	}{
		{"cgroup v1", nil, map[string]string{
			"memory/memory.usage_in_bytes": "3221225472\n", // 3 GiB
			"memory/memory.stat":           "cache 5\ninactive_file 7\ntotal_inactive_file 536870912\n",
		}, 4*gib - (3*gib - 512*mib)},
		{"cgroup v2 with memory.current", nil, map[string]string{
			"memory.current": "2147483648\n", // 2 GiB
			"memory.stat":    "anon 1\ninactive_file 268435456\nactive_file 9\n",
		}, 4*gib - (2*gib - 256*mib)},
		{"cgroup v2 root: usage is MemTotal-MemFree", nil, map[string]string{
			"memory.stat": "inactive_file 268435456\n",
		}, 4*gib - (3*gib - 256*mib)},
		{"inactive file pages above usage", nil, map[string]string{
			"memory.current": "100\n",
			"memory.stat":    "inactive_file 200\n",
		}, 4 * gib},
		{"no cgroup: MemAvailable", nil, nil, 3 * gib},
		{"cgroup v1 without total_inactive_file: MemAvailable", nil, map[string]string{
			"memory/memory.usage_in_bytes": "3221225472\n",
			"memory/memory.stat":           "cache 5\n",
		}, 3 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fakeMachine(t, procFiles(tc.proc), tc.cgroup)
			obs, err := m.Measure()
			if err != nil {
				t.Fatal(err)
			}
			if got := obs[SignalMemoryAvailable]; got.Available != tc.want || got.Capacity != 4*gib {
				t.Errorf("memory.available = %d of %d, want %d of %d", got.Available, got.Capacity, tc.want, 4*gib)
			}
		})
	}

	m := fakeMachine(t, map[string]string{"meminfo": "MemTotal: 4194304 kB\n"}, nil)
	if _, err := m.memory(); err == nil || !strings.Contains(err.Error(), "MemAvailable") {
		t.Errorf("no cgroup and no MemAvailable: err = %v, want one naming MemAvailable", err)
	}
}

// TestMeasurePIDs: pid.available is the smaller of pid_max and
// threads-max less the tasks of /proc/loadavg.
func TestMeasurePIDs(t *testing.T) {
	for _, tc := range []struct {
		name           string
		proc           map[string]string
		avail, capac   int64
		wantErrContain string
	}{
		{"pid_max", nil, 32768 - 87, 32768, ""},
		{"threads-max lower", map[string]string{"sys/kernel/threads-max": "1000\n"}, 1000 - 87, 1000, ""},
		{"bad loadavg", map[string]string{"loadavg": "0.25 0.22\n"}, 0, 0, "no task count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := fakeMachine(t, procFiles(tc.proc), nil).pids()
			if tc.wantErrContain != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrContain) {
					t.Errorf("err = %v, want one containing %q", err, tc.wantErrContain)
				}
				return
			}
			if err != nil || o.Available != tc.avail || o.Capacity != tc.capac {
				t.Errorf("pid.available = %+v, %v; want %d of %d", o, err, tc.avail, tc.capac)
			}
		})
	}
}

// TestMeasureFileSystems: nodefs and imagefs are statfs of their dirs (a
// dir not created yet by its nearest parent); no imagefs dir, no imagefs
// signals; a file system without inodes has no inodesFree signal.
func TestMeasureFileSystems(t *testing.T) {
	stats := map[string]FsStats{
		"/data":       {Bytes: 100 * gib, AvailableBytes: 40 * gib, Inodes: 1000, FreeInodes: 600},
		"/containerd": {Bytes: 50 * gib, AvailableBytes: 5 * gib},
	}
	m := fakeMachine(t, procFiles(nil), nil)
	m.Statfs = func(path string) (FsStats, error) {
		if st, ok := stats[path]; ok {
			return st, nil
		}
		return FsStats{}, fs.ErrNotExist
	}
	m.NodeFs = "/data/agent/kubelet"
	obs, err := m.Measure()
	if err != nil {
		t.Fatal(err)
	}
	if got := obs[SignalNodeFsAvailable]; got != (Observation{Available: 40 * gib, Capacity: 100 * gib}) {
		t.Errorf("nodefs.available = %+v", got)
	}
	if got := obs[SignalNodeFsInodesFree]; got != (Observation{Available: 600, Capacity: 1000}) {
		t.Errorf("nodefs.inodesFree = %+v", got)
	}
	if _, ok := obs[SignalImageFsAvailable]; ok {
		t.Error("no ImageFs, yet imagefs.available was measured")
	}

	m.ImageFs = "/containerd"
	obs, err = m.Measure()
	if err != nil {
		t.Fatal(err)
	}
	if got := obs[SignalImageFsAvailable]; got != (Observation{Available: 5 * gib, Capacity: 50 * gib}) {
		t.Errorf("imagefs.available = %+v", got)
	}
	if _, ok := obs[SignalImageFsInodesFree]; ok {
		t.Error("a file system without inodes has an imagefs.inodesFree signal")
	}

	m.ImageFs = "elsewhere" // relative: no parent exists
	obs, err = m.Measure()
	if err == nil || !strings.Contains(err.Error(), "imagefs") {
		t.Errorf("imagefs not found: err = %v, want one naming imagefs", err)
	}
	if _, ok := obs[SignalNodeFsAvailable]; !ok {
		t.Error("one file system failing lost the other's signals")
	}
}

// TestMeasureHost measures this machine: every signal but imagefs, sane.
func TestMeasureHost(t *testing.T) {
	dir := t.TempDir()
	obs, err := HostMachine(filepath.Join(dir, "kubelet"), "").Measure()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalPIDAvailable} {
		o, ok := obs[s]
		if !ok || o.Capacity <= 0 || o.Available < 0 || o.Available > o.Capacity {
			t.Errorf("%s = %+v (measured %v)", s, o, ok)
		}
	}
	st, err := StatFS(dir)
	if err != nil || st.Bytes != obs[SignalNodeFsAvailable].Capacity {
		t.Errorf("nodefs of a dir not created yet: %+v, want its parent's %+v (%v)", obs[SignalNodeFsAvailable], st, err)
	}
}
