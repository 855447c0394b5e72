package checkconfig

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThisHost runs the real checks on this machine, which (like every
// host `make test` runs on) has cgroups, overlayfs and iptables.
func TestThisHost(t *testing.T) {
	rs := Run(OS{}, Options{})
	byName := map[string]Result{}
	for _, r := range rs {
		byName[r.Name] = r
		t.Logf("%-8s %s: %s", r.Status, r.Name, r.Found)
	}
	for _, n := range []string{"cgroups", "cgroup controller cpu", "cgroup controller memory", "cgroup controller pids",
		"overlayfs", "CONFIG_NET_NS"} {
		if r := byName[n]; r.Status != OK {
			t.Errorf("%s: %s (%s), want ok on this machine; fix: %s", n, r.Status, r.Found, r.Fix)
		}
	}
	// The version must be the one the agent picks (internal/agent: the
	// type of the filesystem at /sys/fs/cgroup).
	var fs unix.Statfs_t
	v2 := unix.Statfs("/sys/fs/cgroup", &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC
	if got := strings.HasPrefix(byName["cgroups"].Found, "v2"); got != v2 {
		t.Errorf("cgroups found %q, but /sys/fs/cgroup is cgroup2: %v", byName["cgroups"].Found, v2)
	}
	// make test installs iptables (scripts/test-deps.sh).
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Fatalf("iptables is not installed: run scripts/test-deps.sh (or apt-get install iptables)")
	}
	for _, n := range []string{"iptables", "iptables-restore, iptables-save"} {
		if r := byName[n]; r.Status != OK {
			t.Errorf("%s: %s (%s), want ok on this machine; fix: %s", n, r.Status, r.Found, r.Fix)
		}
	}
	if f := byName["iptables"].Found; !strings.Contains(f, "nf_tables backend") && !strings.Contains(f, "legacy backend") {
		t.Errorf("iptables found %q names no backend", f)
	}
}
