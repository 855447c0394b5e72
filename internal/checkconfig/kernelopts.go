package checkconfig

import "strings"

// kernelOption is a kernel build option orch needs.
type kernelOption struct {
	names    []string // CONFIG_ names; any one of them will do
	what     string   // what orch needs it for
	required bool     // false: a warning when absent
	module   string   // the module that provides it, when it can be one
	// seen are files whose existence shows the feature in the running
	// kernel when its config cannot be read.
	seen []string
	// sure: when none of seen exists the feature is certainly absent (a
	// namespace has no /proc/self/ns entry); otherwise it may be a module
	// that is not loaded yet.
	sure bool
	fs   string // a name in /proc/filesystems that shows it
}

var kernelOptions = []kernelOption{
	{names: []string{"CONFIG_NAMESPACES"}, what: "namespaces, which isolate every container", required: true, seen: []string{"/proc/self/ns"}, sure: true},
	{names: []string{"CONFIG_NET_NS"}, what: "network namespaces (a network per pod)", required: true, seen: []string{"/proc/self/ns/net"}, sure: true},
	{names: []string{"CONFIG_PID_NS"}, what: "PID namespaces (processes per pod)", required: true, seen: []string{"/proc/self/ns/pid"}, sure: true},
	{names: []string{"CONFIG_IPC_NS"}, what: "IPC namespaces (shared memory per pod)", required: true, seen: []string{"/proc/self/ns/ipc"}, sure: true},
	{names: []string{"CONFIG_UTS_NS"}, what: "UTS namespaces (a hostname per pod)", required: true, seen: []string{"/proc/self/ns/uts"}, sure: true},
	{names: []string{"CONFIG_USER_NS"}, what: "user namespaces (only pods with hostUsers: false need them)", seen: []string{"/proc/self/ns/user"}, sure: true},
	{names: []string{"CONFIG_CGROUPS"}, what: "control groups (pod resource limits)", required: true, seen: []string{"/proc/cgroups"}, sure: true},
	{names: []string{"CONFIG_VETH"}, what: "veth pairs that link pods to the bridge", required: true, module: "veth", seen: []string{"/sys/module/veth"}},
	{names: []string{"CONFIG_BRIDGE"}, what: "the pod bridge (bridge CNI plugin)", required: true, module: "bridge", seen: []string{"/sys/module/bridge"}},
	{names: []string{"CONFIG_BRIDGE_NETFILTER"}, what: "iptables on bridged traffic (Services between pods of one node)", required: true, module: "br_netfilter",
		seen: []string{"/proc/sys/net/bridge", "/sys/module/br_netfilter"}},
	{names: []string{"CONFIG_NETFILTER_XT_MATCH_CONNTRACK"}, what: "the iptables conntrack match (Service rules)", required: true, module: "xt_conntrack", seen: []string{"/sys/module/xt_conntrack"}},
	{names: []string{"CONFIG_NF_NAT"}, what: "NAT (Service DNAT and pod masquerading)", required: true, module: "nf_nat", seen: []string{"/sys/module/nf_nat"}},
	{names: []string{"CONFIG_IP_NF_NAT", "CONFIG_NFT_NAT"}, what: "the iptables nat table (IP_NF_NAT for legacy iptables, NFT_NAT for nf_tables)", required: true,
		module: "iptable_nat", seen: []string{"/sys/module/iptable_nat", "/sys/module/nft_chain_nat"}},
	{names: []string{"CONFIG_NETFILTER_XT_MATCH_STATISTIC"}, what: "the iptables statistic match (Service load balancing)", required: true, module: "xt_statistic", seen: []string{"/sys/module/xt_statistic"}},
	{names: []string{"CONFIG_NETFILTER_XT_MATCH_COMMENT"}, what: "the iptables comment match (Service rules)", required: true, module: "xt_comment", seen: []string{"/sys/module/xt_comment"}},
	{names: []string{"CONFIG_VXLAN"}, what: "VXLAN, the default --network-backend between nodes (host-gw and none do without)", module: "vxlan", seen: []string{"/sys/module/vxlan"}},
	{names: []string{"CONFIG_OVERLAY_FS"}, what: "overlayfs, containerd's snapshotter for image layers", required: true, module: "overlay", seen: []string{"/sys/module/overlay"}, fs: "overlay"},
}

func (o kernelOption) name() string { return strings.Join(o.names, " or ") }

// fix says how to get the option.
func (o kernelOption) fix() string {
	if o.module == "" {
		return "use a kernel built with " + o.names[0] + "=y (Debian's and Ubuntu's stock kernels have it), needed for " + o.what
	}
	return "use a kernel built with " + o.names[0] + "=y or =m (Debian's and Ubuntu's stock kernels have it), needed for " + o.what +
		"; if it is a module, load it: modprobe " + o.module
}

// fromConfig judges the option from the kernel config.
func (o kernelOption) fromConfig(config map[string]string) Result {
	for _, n := range o.names {
		which := "" // which of the names, when there are several
		if len(o.names) > 1 {
			which = n + "="
		}
		switch config[n] {
		case "y":
			return Result{Name: o.name(), Status: OK, Found: which + "y (built in)"}
		case "m":
			return Result{Name: o.name(), Status: OK, Found: which + strings.TrimSuffix("m (module "+o.module, " ") + ")"}
		}
	}
	return Result{Name: o.name(), Status: absent(o.required), Found: "not set", Fix: o.fix()}
}

// observe judges the option from the running kernel, without its config.
func (o kernelOption) observe(h Host, k kernel) Result {
	r := Result{Name: o.name(), Status: OK}
	if o.fs != "" && hasFilesystem(h, o.fs) {
		r.Found = o.fs + " in /proc/filesystems"
		return r
	}
	for _, p := range o.seen {
		if h.Exists(p) {
			r.Found = "seen " + p
			return r
		}
	}
	if k.moduleAvailable(o.module) {
		r.Found = "module " + o.module + " available (/lib/modules/" + k.release + ")"
		return r
	}
	r.Found = "no " + strings.Join(o.seen, " or ")
	if o.sure {
		r.Status, r.Fix = absent(o.required), o.fix()
		return r
	}
	// Without the config, an absent module may just not be loaded yet.
	r.Status = Warning
	r.Fix = "could not tell whether the kernel has " + o.names[0] + ": modprobe " + o.module +
		" to load it, or pass --kernel-config FILE to check the config; it is needed for " + o.what
	return r
}

// hasFilesystem reports whether name is in /proc/filesystems.
func hasFilesystem(h Host, name string) bool {
	b, err := h.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[len(f)-1] == name {
			return true
		}
	}
	return false
}
