package checkconfig

import (
	"fmt"
	"strings"
)

// cgroupController is a controller the kubelet and runc put pods in.
type cgroupController struct {
	name     string // the cgroup v2 name
	v1       string // the cgroup v1 name
	kconfig  string // the kernel option that provides it
	required bool   // false: pods run without it, with less isolation
}

var cgroupControllers = []cgroupController{
	{name: "cpu", v1: "cpu", kconfig: "CONFIG_CGROUP_SCHED", required: true},
	{name: "memory", v1: "memory", kconfig: "CONFIG_MEMCG", required: true},
	{name: "pids", v1: "pids", kconfig: "CONFIG_CGROUP_PIDS", required: true},
	{name: "cpuset", v1: "cpuset", kconfig: "CONFIG_CPUSETS"},
	{name: "io", v1: "blkio", kconfig: "CONFIG_BLK_CGROUP"},
}

const (
	cgroupRoot         = "/sys/fs/cgroup"
	cgroupControllers2 = cgroupRoot + "/cgroup.controllers"
	mountsFile         = "/proc/self/mounts"
)

// checkCgroups reports the cgroup version (as the agent decides it:
// /sys/fs/cgroup is cgroup2 or not) and each controller.
func checkCgroups(h Host, d distro) []Result {
	if b, err := h.ReadFile(cgroupControllers2); err == nil {
		have := map[string]bool{}
		for _, c := range strings.Fields(string(b)) {
			have[c] = true
		}
		rs := []Result{{Name: "cgroups", Status: OK, Found: "v2 (unified hierarchy at " + cgroupRoot + ")"}}
		for _, c := range cgroupControllers {
			r := Result{Name: "cgroup controller " + c.name, Status: OK, Found: "enabled (" + cgroupControllers2 + ")"}
			if !have[c.name] {
				r.Status, r.Found = absent(c.required), "not in "+cgroupControllers2
				r.Fix = fmt.Sprintf("enable the %s controller: use a kernel with %s=y and remove cgroup_disable=%s from the kernel command line "+
					"(some boards, e.g. Raspberry Pi, also need cgroup_enable=%s)", c.name, c.kconfig, c.name, c.name)
				if d.raspberryPi && c.name == "memory" {
					r.Fix = "Raspberry Pi OS turns the memory controller off: add cgroup_memory=1 cgroup_enable=memory to the one line of " +
						"/boot/firmware/cmdline.txt (/boot/cmdline.txt before bookworm) and reboot"
				}
			}
			rs = append(rs, r)
		}
		return rs
	}
	mounts := cgroupV1Mounts(h)
	if len(mounts) == 0 {
		return []Result{{Name: "cgroups", Status: Missing, Found: "no cgroup filesystem mounted at " + cgroupRoot,
			Fix: "mount cgroup v2 (mount -t cgroup2 none /sys/fs/cgroup; systemd does it at boot), or mount the cpu, memory and pids controllers of cgroup v1"}}
	}
	rs := []Result{{Name: "cgroups", Status: OK, Found: "v1 (one hierarchy per controller under " + cgroupRoot + ")"}}
	for _, c := range cgroupControllers {
		r := Result{Name: "cgroup controller " + c.name}
		if at, ok := mounts[c.v1]; ok {
			r.Status, r.Found = OK, c.v1+" mounted at "+at
		} else {
			r.Status, r.Found = absent(c.required), c.v1+" not mounted"
			r.Fix = fmt.Sprintf("enable cgroup v2 (systemd.unified_cgroup_hierarchy=1 on the kernel command line), or mount the %s controller "+
				"(mkdir -p /sys/fs/cgroup/%s && mount -t cgroup -o %s cgroup /sys/fs/cgroup/%s); the kernel needs %s=y", c.v1, c.v1, c.v1, c.v1, c.kconfig)
		}
		rs = append(rs, r)
	}
	return rs
}

// cgroupV1Mounts maps each cgroup v1 controller mounted to where.
func cgroupV1Mounts(h Host) map[string]string {
	b, err := h.ReadFile(mountsFile)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(f[3], ",") {
			if _, seen := m[opt]; !seen {
				m[opt] = f[1]
			}
		}
	}
	return m
}

// absent is the status of a feature that is not there.
func absent(required bool) Status {
	if required {
		return Missing
	}
	return Warning
}
