// Package sysctls is the kubelet's sysctl admission: a pod may set the
// safe sysctls (namespaced, isolated from other pods) and those the node
// allows with --allowed-unsafe-sysctls, never one that would reach the
// host through a namespace the pod shares with it.
package sysctls

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-helpers/node/util/sysctl"
)

// ForbiddenReason is the pod status reason of a refusal, as upstream's.
const ForbiddenReason = "SysctlForbidden"

// safe are upstream's safe sysctls, with the kernel version from which
// each is namespaced ("" for all).
var safe = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
	{"net.ipv4.tcp_slow_start_after_idle", "4.15"},
	{"net.ipv4.tcp_notsent_lowat", "4.6"},
}

// Allowlist is the sysctls and sysctl prefixes (a pattern ending in *)
// pods may set, each with the namespace it belongs to.
type Allowlist struct {
	exact    map[string]sysctl.Namespace
	prefixes map[string]sysctl.Namespace
}

// New is the safe sysctls the kernel (its release, e.g. "6.1.0-18-amd64";
// "" or unparsable keeps only those namespaced on every kernel) namespaces,
// plus the unsafe ones allowed: names or patterns ending in *, each of
// which must be namespaced.
func New(kernelRelease string, allowedUnsafe []string) (*Allowlist, error) {
	a := &Allowlist{exact: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	kernel, _ := version.ParseGeneric(kernelRelease)
	var names []string
	for _, s := range safe {
		if s.kernel == "" || kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel)) {
			names = append(names, s.name)
		}
	}
	for _, pattern := range append(names, allowedUnsafe...) {
		ns, nameOrPrefix, prefixed := sysctl.GetNamespace(sysctl.NormalizeName(pattern))
		if ns == sysctl.UnknownNamespace {
			return nil, fmt.Errorf("--allowed-unsafe-sysctls: %q is not known to be namespaced, so a pod setting it would change the host", pattern)
		}
		if prefixed {
			a.prefixes[nameOrPrefix] = ns
		} else {
			a.exact[nameOrPrefix] = ns
		}
	}
	return a, nil
}

// Check is why pod may not run on this node ("" when it may): a sysctl
// that is not allowed, or one of a namespace the pod shares with the host.
// The message is upstream's.
func (a *Allowlist) Check(pod *corev1.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		name := sysctl.NormalizeName(s.Name)
		ns, ok := a.exact[name]
		for prefix, pns := range a.prefixes {
			if !ok && strings.HasPrefix(name, prefix) {
				ns, ok = pns, true
			}
		}
		switch {
		case !ok:
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		case ns == sysctl.IPCNamespace && pod.Spec.HostIPC, ns == sysctl.NetNamespace && pod.Spec.HostNetwork, ns == sysctl.UserNamespace && hostUsers:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
	}
	return ""
}
