package checkconfig

import (
	"fmt"
	"strings"
)

const (
	bridgeNFCallIPTables = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	ipForward            = "/proc/sys/net/ipv4/ip_forward"
	procSwaps            = "/proc/swaps"
)

// checkOverlay: containerd's overlayfs snapshotter needs the overlay
// filesystem.
func checkOverlay(h Host, k kernel) Result {
	r := Result{Name: "overlayfs"}
	const fix = "modprobe overlay; echo overlay >> /etc/modules-load.d/orch.conf (so it loads at boot)"
	switch {
	case hasFilesystem(h, "overlay"):
		r.Status, r.Found = OK, "overlay in /proc/filesystems"
	case k.moduleAvailable("overlay") || k.config["CONFIG_OVERLAY_FS"] == "m":
		r.Status, r.Found, r.Fix = Warning, "module overlay available but not loaded (the first overlay mount should load it)", fix
	default:
		r.Status, r.Found = Missing, "overlay not in /proc/filesystems and no overlay module"
		r.Fix = fix + "; the kernel needs CONFIG_OVERLAY_FS=y or =m"
	}
	return r
}

// checkBrNetfilter: without br_netfilter, traffic between pods on one
// node's bridge bypasses iptables, so Services between them fail. orch
// runs modprobe br_netfilter at start (internal/network), so a module
// that is there but not loaded is only a warning.
func checkBrNetfilter(h Host, k kernel, d distro) Result {
	r := Result{Name: "br_netfilter"}
	const fix = "modprobe br_netfilter; echo br_netfilter >> /etc/modules-load.d/orch.conf (so it loads at boot)"
	if v, err := readTrimmed(h, bridgeNFCallIPTables); err == nil {
		r.Status, r.Found = OK, "loaded (net.bridge.bridge-nf-call-iptables="+v+")"
		if v != "1" {
			r.Found += "; orch sets it to 1 at start"
		}
		return r
	}
	_, noModprobe := h.LookPath("modprobe")
	available := k.moduleAvailable("br_netfilter") || k.config["CONFIG_BRIDGE_NETFILTER"] == "m"
	switch {
	case available && noModprobe == nil:
		r.Status, r.Found, r.Fix = Warning, "not loaded; orch runs modprobe br_netfilter at start", fix
	case noModprobe != nil:
		r.Status, r.Found = Missing, "not loaded (no "+bridgeNFCallIPTables+") and no modprobe on PATH to load it"
		r.Fix = d.installCmd(pkgKmod) + "; " + fix
	default:
		r.Status, r.Found = Missing, "not loaded (no "+bridgeNFCallIPTables+") and no br_netfilter module for kernel "+k.release
		r.Fix = fix + "; the kernel needs CONFIG_BRIDGE_NETFILTER=y or =m"
	}
	return r
}

// checkIPForward: pods reach other nodes and the outside through the
// host's forwarding.
func checkIPForward(h Host) Result {
	r := Result{Name: "net.ipv4.ip_forward"}
	v, err := readTrimmed(h, ipForward)
	switch {
	case err != nil:
		r.Status, r.Found = Missing, "cannot read "+ipForward+": "+err.Error()
		r.Fix = "mount /proc (mount -t proc proc /proc) so that orch can set sysctls; the kernel needs IPv4 networking"
	case v == "1":
		r.Status, r.Found = OK, "1"
	default:
		r.Status, r.Found = Warning, v+" (forwarding off)"
		r.Fix = "sysctl -w net.ipv4.ip_forward=1 and keep it at boot (echo net.ipv4.ip_forward=1 > /etc/sysctl.d/90-orch.conf); " +
			"orch sets it at start, but a firewall or network manager that turns it off later cuts pods off from other nodes and the outside"
	}
	return r
}

// checkSwap: the kubelet's memory limits and eviction assume no swap.
func checkSwap(h Host) Result {
	r := Result{Name: "swap"}
	b, err := h.ReadFile(procSwaps)
	if err != nil {
		r.Status, r.Found, r.Fix = Warning, "cannot read "+procSwaps+": "+err.Error(), "mount /proc (mount -t proc proc /proc)"
		return r
	}
	var devices []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) > 0 {
			devices = append(devices, f[0])
		}
	}
	if len(devices) == 0 {
		r.Status, r.Found = OK, "off"
		return r
	}
	r.Status, r.Found = Warning, fmt.Sprintf("on (%s)", strings.Join(devices, ", "))
	r.Fix = "swapoff -a, and remove the swap lines from /etc/fstab: pods' memory limits and the kubelet's memory eviction assume swap is off"
	return r
}
