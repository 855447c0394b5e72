package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// procDir is where the node's /proc is read (tests point it elsewhere).
var procDir = "/proc"

// userHZ is the unit of /proc/stat's CPU times on Linux.
const userHZ = 100

// nodeStats reads the node's CPU and memory from /proc and its file system
// from statfs(2) of the root directory, as cAdvisor reports the root cgroup:
// CPU usage is all non-idle time; memory usage is MemTotal-MemFree and the
// working set that minus the inactive file cache.
func (c *statsCollector) nodeStats() (*statsapi.NodeStats, error) {
	now := c.now()
	stat, err := os.ReadFile(procDir + "/stat")
	if err != nil {
		return nil, err
	}
	busyTicks, boot, err := parseProcStat(stat)
	if err != nil {
		return nil, err
	}
	usage := busyTicks * (1e9 / userHZ)
	node := &statsapi.NodeStats{
		NodeName:  c.node,
		StartTime: metav1.NewTime(time.Unix(boot, 0)),
		CPU: &statsapi.CPUStats{Time: metav1.NewTime(now), UsageCoreNanoSeconds: ptr(usage),
			UsageNanoCores: c.rate("node", now.UnixNano(), usage)},
	}
	meminfo, err := os.ReadFile(procDir + "/meminfo")
	if err != nil {
		return nil, err
	}
	if m := parseMeminfo(meminfo); m["MemTotal"] > 0 {
		used := m["MemTotal"] - m["MemFree"]
		ws := used - min(used, m["Inactive(file)"])
		node.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(now), UsageBytes: ptr(used), WorkingSetBytes: ptr(ws),
			AvailableBytes: ptr(m["MemTotal"] - ws), RSSBytes: ptr(m["AnonPages"])}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(c.root, &fs); err == nil {
		bs := uint64(fs.Bsize)
		node.Fs = &statsapi.FsStats{Time: metav1.NewTime(now), CapacityBytes: ptr(fs.Blocks * bs), AvailableBytes: ptr(fs.Bavail * bs),
			UsedBytes: ptr((fs.Blocks - fs.Bfree) * bs), Inodes: ptr(fs.Files), InodesFree: ptr(fs.Ffree), InodesUsed: ptr(fs.Files - fs.Ffree)}
	}
	return node, nil
}

// parseProcStat returns the busy CPU ticks of all CPUs (user, nice, system,
// irq, softirq, steal) and the boot time in seconds since the epoch.
func parseProcStat(data []byte) (busy uint64, boot int64, err error) {
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "cpu":
			if len(fields) < 9 {
				return 0, 0, fmt.Errorf("/proc/stat: short cpu line %q", sc.Text())
			}
			for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
				v, err := strconv.ParseUint(fields[i], 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("/proc/stat: %w", err)
				}
				busy += v
			}
			found = true
		case "btime":
			if len(fields) > 1 {
				boot, _ = strconv.ParseInt(fields[1], 10, 64)
			}
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("/proc/stat has no cpu line")
	}
	return busy, boot, nil
}

// parseMeminfo returns /proc/meminfo's values in bytes.
func parseMeminfo(data []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[name] = v
	}
	return out
}
