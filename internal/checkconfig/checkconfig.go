// Package checkconfig checks that a host has the kernel and userland
// features orch needs (cgroups and their controllers, namespaces, overlayfs,
// netfilter, br_netfilter, IP forwarding, iptables, containerd, runc and the
// CNI plugins) and says how to fix each one it lacks, with the commands of
// the host's distribution (Debian and Ubuntu, Fedora, RHEL and its
// rebuilds, Alpine, Raspberry Pi OS). It backs `orch check-config`.
//
// Every check reads the host through Host, so tests run them against fake
// hosts; OS is the real machine:
//
//	results := checkconfig.Run(checkconfig.OS{}, checkconfig.Options{CNIBinDir: "/usr/lib/cni"})
//	checkconfig.Write(os.Stdout, results)
//	if checkconfig.Failed(results) { ... }
package checkconfig

// Status is the outcome of one check.
type Status string

const (
	// OK: the feature is there.
	OK Status = "ok"
	// Missing: a feature orch needs is absent; orch (or part of it) will
	// not work until it is fixed.
	Missing Status = "missing"
	// Warning: an optional feature is absent, or something works now but
	// is fragile; orch runs.
	Warning Status = "warning"
)

// Result is one check: what was looked at, what was found and, unless it
// is OK, how to fix it.
type Result struct {
	Name   string // e.g. "cgroup controller memory", "CONFIG_VETH"
	Status Status
	Found  string // what the check saw, e.g. "v1.8.9 (nf_tables) at /usr/sbin/iptables"
	Fix    string // a sentence that says what to do; empty when Status is OK
}

// Options change where the checks look.
type Options struct {
	// KernelConfig is a kernel config file to read instead of
	// /proc/config.gz and /boot/config-RELEASE (it may be gzipped).
	KernelConfig string
	// CNIBinDir is where orch's containerd looks for the CNI plugins
	// (containerd.Config.CNIBinDir; DefaultCNIBinDir when empty).
	CNIBinDir string
}

// DefaultCNIBinDir is where Debian's containernetworking-plugins installs
// the CNI plugins, and where orch's containerd looks for them.
const DefaultCNIBinDir = "/usr/lib/cni"

// Run runs every check against h, in the order they are reported.
func Run(h Host, opts Options) []Result {
	if opts.CNIBinDir == "" {
		opts.CNIBinDir = DefaultCNIBinDir
	}
	k := readKernel(h, opts.KernelConfig)
	d := detectDistro(h)
	var rs []Result
	rs = append(rs, checkCgroups(h, d)...)
	rs = append(rs, checkKernelConfig(h, k)...)
	rs = append(rs, checkOverlay(h, k), checkBrNetfilter(h, k, d), checkIPForward(h), checkSwap(h))
	rs = append(rs, checkIPTables(h, d)...)
	rs = append(rs, checkContainerd(h, d), checkRunc(h, d), checkCNI(h, opts.CNIBinDir, d))
	return rs
}

// Failed reports whether any result is Missing: orch cannot run as it is.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Missing {
			return true
		}
	}
	return false
}
