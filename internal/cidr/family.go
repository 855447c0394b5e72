package cidr

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FamilyOf is the IP family of an address: IPv6 for an IPv6 address, IPv4
// otherwise (an IPv4-mapped IPv6 address is IPv4, as the kernel's IPv4 stack
// carries it; so is a string that is no address).
func FamilyOf(ip string) corev1.IPFamily {
	if addr, err := netip.ParseAddr(strings.TrimSpace(ip)); err == nil && addr.Is6() && !addr.Is4In6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// AddrOf is ip in canonical form when it is an address of family, "" when
// it is of the other family or no address.
func AddrOf(ip string, family corev1.IPFamily) string {
	addr, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil || FamilyOf(ip) != family {
		return ""
	}
	return addr.Unmap().String()
}

// PodIPs are the pod's addresses: status.podIPs, or status.podIP for a pod
// that lists none (nothing before one is assigned).
func PodIPs(pod *corev1.Pod) []string {
	if len(pod.Status.PodIPs) == 0 {
		if pod.Status.PodIP == "" {
			return nil
		}
		return []string{pod.Status.PodIP}
	}
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

// PodIPOf is the pod's address of family, in canonical form, or "" when it
// has none (a single-stack pod, or one whose address is not assigned yet).
func PodIPOf(pod *corev1.Pod, family corev1.IPFamily) string {
	for _, ip := range PodIPs(pod) {
		if a := AddrOf(ip, family); a != "" {
			return a
		}
	}
	return ""
}
