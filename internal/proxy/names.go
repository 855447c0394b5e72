package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Names of the chains the proxy owns. They are kube-proxy's names, so that
// operators (and their scripts) recognise them.
const (
	chainServices         = "KUBE-SERVICES"
	chainExternalServices = "KUBE-EXTERNAL-SERVICES"
	chainNodePorts        = "KUBE-NODEPORTS"
	chainPostrouting      = "KUBE-POSTROUTING"
	chainMarkMasq         = "KUBE-MARK-MASQ"
	chainForward          = "KUBE-FORWARD"
	chainProxyFirewall    = "KUBE-PROXY-FIREWALL"
	// chainFirewall is the kubelet's chain in upstream; here the proxy
	// writes it, for the rule that goes with NodePorts on 127.0.0.1.
	chainFirewall = "KUBE-FIREWALL"

	prefixSVC = "KUBE-SVC-"
	prefixSVL = "KUBE-SVL-"
	prefixEXT = "KUBE-EXT-"
	prefixFW  = "KUBE-FW-"
	prefixSEP = "KUBE-SEP-"

	// masqMark is the packet mark that asks KUBE-POSTROUTING to masquerade.
	masqMark = "0x4000"
)

// natFixedChains are written on full syncs and when they change, in this
// order.
var natFixedChains = []string{chainServices, chainNodePorts, chainPostrouting, chainMarkMasq}

// filterFixedChains are the filter chains written on full syncs and when
// they change, in this order. IPv6 has no KUBE-FIREWALL (see
// builder.finish).
func filterFixedChains(ipv6 bool) []string {
	chains := []string{chainServices, chainExternalServices, chainForward, chainNodePorts, chainProxyFirewall}
	if ipv6 {
		return chains
	}
	return append(chains, chainFirewall)
}

// isServiceChain reports whether name is a per-service chain of ours
// (KUBE-SVC-, KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-SEP-).
func isServiceChain(name string) bool {
	for _, p := range []string{prefixSVC, prefixSVL, prefixEXT, prefixFW, prefixSEP} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// isOwnedChain reports whether the proxy writes a chain of that name in
// table ("nat" or "filter") of the family.
func isOwnedChain(table, name string, ipv6 bool) bool {
	fixed := filterFixedChains(ipv6)
	if table == "nat" {
		if isServiceChain(name) {
			return true
		}
		fixed = natFixedChains
	}
	for _, f := range fixed {
		if f == name {
			return true
		}
	}
	return false
}

// chainHash is kube-proxy's chain suffix: the first 16 characters of the
// base32 encoding of sha256(s).
func chainHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// portChainName is the chain of a service port: prefix + hash of the
// service port name ("ns/name:port") and the lower-case protocol.
func portChainName(prefix, portName, protocol string) string {
	return prefix + chainHash(portName+protocol)
}

// endpointChainName is the KUBE-SEP chain of one endpoint ("ip:port") of
// a service port.
func endpointChainName(portName, protocol, endpoint string) string {
	return prefixSEP + chainHash(portName+protocol+endpoint)
}
