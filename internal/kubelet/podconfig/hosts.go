package podconfig

import (
	"bytes"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Headers of the /etc/hosts files the kubelet writes; tools in pods look
// for them, so they are byte for byte upstream's.
const (
	etcHostsHeader            = "# Kubernetes-managed hosts file.\n"
	etcHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
	etcHostsAliasesHeader     = "# Entries added by HostAliases.\n"
)

// etcHostsLoopback are the fixed entries after the header: localhost on
// both families and the usual IPv6 names.
var etcHostsLoopback = []string{
	"127.0.0.1\tlocalhost",
	"::1\tlocalhost ip6-localhost ip6-loopback",
	"fe00::0\tip6-localnet",
	"fe00::0\tip6-mcastprefix",
	"fe00::1\tip6-allnodes",
	"fe00::2\tip6-allrouters",
}

// EtcHosts is the /etc/hosts the kubelet writes for a pod on the pod
// network: the header, the loopback entries, one line per pod IP naming
// the pod ("<ip>\t<hostname>.<domain>\t<hostname>", or "<ip>\t<hostname>"
// when domain is empty) and the pod's hostAliases. hostname and domain
// are what Hostname returns. Upstream mounts the file only once the pod
// has IPs (see Mounts); the content does not depend on that.
func EtcHosts(pod *corev1.Pod, podIPs []string, hostname, domain string) []byte {
	var b bytes.Buffer
	b.WriteString(etcHostsHeader)
	for _, l := range etcHostsLoopback {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	names := hostname
	if domain != "" {
		names = hostname + "." + domain + "\t" + hostname
	}
	for _, ip := range podIPs {
		b.WriteString(ip)
		b.WriteByte('\t')
		b.WriteString(names)
		b.WriteByte('\n')
	}
	writeHostAliases(&b, pod.Spec.HostAliases)
	return b.Bytes()
}

// EtcHostsHostNetwork is the /etc/hosts the kubelet writes for a pod on
// the node's network: the host-network header, the node's own hosts file
// (nodeHosts, which the caller reads from the node's /etc/hosts) as it
// is, and the pod's hostAliases.
func EtcHostsHostNetwork(nodeHosts []byte, pod *corev1.Pod) []byte {
	var b bytes.Buffer
	b.WriteString(etcHostsHeaderHostNetwork)
	b.Write(nodeHosts)
	writeHostAliases(&b, pod.Spec.HostAliases)
	return b.Bytes()
}

// writeHostAliases appends a blank line, the aliases header and one line
// per alias (the IP and its hostnames, tab-separated), or nothing when
// there are no aliases.
func writeHostAliases(b *bytes.Buffer, aliases []corev1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteByte('\n')
	b.WriteString(etcHostsAliasesHeader)
	for _, a := range aliases {
		b.WriteString(a.IP)
		b.WriteByte('\t')
		b.WriteString(strings.Join(a.Hostnames, "\t"))
		b.WriteByte('\n')
	}
}
