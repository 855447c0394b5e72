package podconfig

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits of a pod's resolver configuration, those of the API's validation
// of dnsConfig, which the kubelet also applies to what it composes.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	// maxDNSSearchPath is the longest search domain kept (a DNS-1123
	// subdomain): some resolvers (glibc 2.28) abort on longer ones.
	maxDNSSearchPath = 253
)

// Reasons of the Warning events upstream's kubelet records while it forms
// a pod's DNS configuration.
const (
	// ReasonDNSConfigForming: nameservers or search domains were dropped
	// to fit the limits (a pod event).
	ReasonDNSConfigForming = "DNSConfigForming"
	// ReasonMissingClusterDNS: the pod wants cluster DNS but the kubelet
	// has no cluster DNS server, so it gets the node's resolver instead.
	// Upstream records it on the node with Message and on the pod with
	// Message prefixed by `pod: "<name>_<namespace>(<uid>)". `.
	ReasonMissingClusterDNS = "MissingClusterDNS"
)

// ClusterDNS is the kubelet's cluster DNS configuration: the servers'
// IPs (--cluster-dns) and the cluster domain (--cluster-domain, e.g.
// cluster.local).
type ClusterDNS struct {
	Servers []string
	Domain  string
}

// DNSWarning is something that went wrong, but not fatally, while forming
// a pod's DNS configuration: upstream records it as a Warning event with
// Reason (one of the Reason* constants), or only logs it when Reason is
// empty.
type DNSWarning struct {
	Reason  string
	Message string
}

// defaultDNSOptions are the options of a pod on cluster DNS.
var defaultDNSOptions = []string{"ndots:5"}

type podDNSKind int

const (
	podDNSCluster podDNSKind = iota
	podDNSHost
	podDNSNone
)

// DNSConfig is the DNSConfig of RunPodSandbox for pod, as upstream's
// kubelet forms it from the pod's dnsPolicy and dnsConfig, the cluster
// DNS and the node's resolver (host, which must come from a resolv.conf
// that parsed: upstream fails every pod while it does not):
//
//   - ClusterFirst (not on the node's network) and
//     ClusterFirstWithHostNet: the cluster DNS servers; the searches
//     <namespace>.svc.<domain>, svc.<domain>, <domain> then the node's,
//     without duplicates (only the node's when the domain is empty); the
//     option ndots:5. Without cluster DNS servers the pod falls back to
//     Default with a MissingClusterDNS warning.
//   - ClusterFirst on the node's network, and Default: the node's.
//   - None: nothing but the pod's dnsConfig.
//   - any other policy (the API rejects them): ClusterFirst, with a
//     warning.
//
// The pod's dnsConfig is then appended (nameservers and searches without
// duplicates, options merged by name, the pod's winning), and the result
// cut to 3 nameservers and to 32 search domains of at most 253 characters
// and 2048 in all, with a DNSConfigForming warning for each cut. Options
// are ordered by first appearance (upstream's order is random). The only
// error is a cluster DNS server that is not an IP.
func DNSConfig(pod *corev1.Pod, cluster ClusterDNS, host HostResolv) (*runtimeapi.DNSConfig, []DNSWarning, error) {
	servers := make([]string, 0, len(cluster.Servers))
	for _, s := range cluster.Servers {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, nil, fmt.Errorf("cluster DNS server %q is not an IP address (set --cluster-dns to the IPs of the cluster's DNS service)", s)
		}
		servers = append(servers, ip.String())
	}

	var warnings []DNSWarning
	cfg := &runtimeapi.DNSConfig{
		Servers:  slices.Clone(host.Nameservers),
		Searches: slices.Clone(host.Searches),
		Options:  slices.Clone(host.Options),
	}
	kind, ok := podDNSKindOf(pod)
	if !ok {
		warnings = append(warnings, DNSWarning{Message: fmt.Sprintf("invalid DNSPolicy=%v: falling back to %q policy", pod.Spec.DNSPolicy, corev1.DNSClusterFirst)})
	}
	switch kind {
	case podDNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case podDNSCluster:
		if len(servers) == 0 {
			warnings = append(warnings, DNSWarning{Reason: ReasonMissingClusterDNS, Message: fmt.Sprintf(
				"kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
				corev1.DNSClusterFirst, corev1.DNSDefault)})
			break // the node's, as Default
		}
		cfg.Servers = servers
		cfg.Searches = clusterSearches(pod.Namespace, cluster.Domain, cfg.Searches)
		cfg.Options = slices.Clone(defaultDNSOptions)
	}

	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = withoutDuplicates(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = withoutDuplicates(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergePodDNSOptions(cfg.Options, dc.Options)
	}

	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		warnings = append(warnings, DNSWarning{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s",
			strings.Join(cfg.Servers, " "))})
	}
	var cut bool
	if cfg.Searches, cut = fitSearches(cfg.Searches); cut {
		warnings = append(warnings, DNSWarning{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
			"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s",
			strings.Join(cfg.Searches, " "))})
	}
	return cfg, warnings, nil
}

// podDNSKindOf is the resolver configuration the pod's dnsPolicy asks
// for; ok is false for a policy the API does not know (treated as
// ClusterFirst, even on the node's network).
func podDNSKindOf(pod *corev1.Pod) (kind podDNSKind, ok bool) {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
		return podDNSNone, true
	case corev1.DNSClusterFirstWithHostNet:
		return podDNSCluster, true
	case corev1.DNSClusterFirst:
		if pod.Spec.HostNetwork {
			return podDNSHost, true
		}
		return podDNSCluster, true
	case corev1.DNSDefault:
		return podDNSHost, true
	}
	return podDNSCluster, false
}

// clusterSearches puts the cluster's search domains for namespace before
// the node's.
func clusterSearches(namespace, domain string, hostSearches []string) []string {
	if domain == "" {
		return hostSearches
	}
	return withoutDuplicates(append([]string{namespace + ".svc." + domain, "svc." + domain, domain}, hostSearches...))
}

// withoutDuplicates keeps the first of equal strings, in order.
func withoutDuplicates(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergePodDNSOptions merges the pod's dnsConfig options into options,
// one per name (the part before the first ':'): the pod's value replaces
// an existing one in its place, new names are appended; an option with
// an empty value is written as its bare name.
func mergePodDNSOptions(options []string, pod []corev1.PodDNSConfigOption) []string {
	type option struct{ name, value string }
	var merged []option
	at := map[string]int{}
	set := func(name, value string) {
		if i, ok := at[name]; ok {
			merged[i].value = value
			return
		}
		at[name] = len(merged)
		merged = append(merged, option{name, value})
	}
	for _, o := range options {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	out := make([]string, 0, len(merged))
	for _, o := range merged {
		if o.value == "" {
			out = append(out, o.name)
		} else {
			out = append(out, o.name+":"+o.value)
		}
	}
	return out
}

// fitSearches cuts searches to the limits: the first 32, without those
// longer than 253 characters, then without the last ones until the line
// is at most 2048 characters. cut says whether anything was dropped. It
// reuses searches' array.
func fitSearches(searches []string) (fit []string, cut bool) {
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	fit = searches[:0]
	for _, s := range searches {
		if len(s) > maxDNSSearchPath {
			cut = true
			continue
		}
		fit = append(fit, s)
	}
	n := len(strings.Join(fit, " "))
	if n <= maxDNSSearchListChars {
		return fit, cut
	}
	i := len(fit)
	for i > 0 && n > maxDNSSearchListChars {
		i--
		n -= len(fit[i]) + 1
	}
	return fit[:i], true
}
