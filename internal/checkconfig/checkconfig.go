// Package checkconfig checks that a host has the kernel and userland
// features orch needs (cgroups and their controllers, namespaces, overlayfs,
// netfilter, br_netfilter, IP forwarding, iptables) and says how to fix
// each one it lacks, with the commands of the host's distribution (Debian
// and Ubuntu, Fedora, RHEL and its rebuilds, Alpine, Raspberry Pi OS). It
// also reports the node runtime orch carries itself (containerd linked in;
// runc, containerd-shim-runc-v2 and the CNI plugins embedded), which the
// host does not provide. It backs `orch check-config`.
//
// Every check reads the host through Host, so tests run them against fake
// hosts; OS is the real machine. The caller describes the binary's runtime
// (RuntimeInfo), so this package does not link containerd:
//
//	files, err := payload.Manifest()
//	rt := checkconfig.RuntimeInfo{ContainerdVersion: daemon.Version(), Err: err}
//	for _, f := range files {
//		rt.Files = append(rt.Files, f.Name)
//	}
//	results := checkconfig.Run(checkconfig.OS{}, checkconfig.Options{Runtime: rt})
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
	// Runtime is the node runtime the orch binary carries.
	Runtime RuntimeInfo
}

// Run runs every check against h, in the order they are reported.
func Run(h Host, opts Options) []Result {
	k := readKernel(h, opts.KernelConfig)
	d := detectDistro(h)
	var rs []Result
	rs = append(rs, checkCgroups(h, d)...)
	rs = append(rs, checkKernelConfig(h, k)...)
	rs = append(rs, checkOverlay(h, k), checkBrNetfilter(h, k, d), checkIPForward(h), checkSwap(h))
	rs = append(rs, checkIPTables(h, d)...)
	rs = append(rs, checkRuntime(opts.Runtime))
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
