package netpol

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Names of the chains of the filter table the enforcer owns. They follow
// kube-proxy's style (KUBE- and a hash) so that operators recognise them.
const (
	// chainForward and chainInput are jumped to, first, from FORWARD and
	// INPUT: traffic between pods (and from pods to other hosts) passes
	// FORWARD, traffic from a pod to its own node INPUT.
	chainForward = "KUBE-NP-FORWARD"
	chainInput   = "KUBE-NP-INPUT"

	// A pod of this node that a policy isolates has a chain per direction:
	// KUBE-NP-IN-<hash of ns/name> for its ingress, KUBE-NP-OUT- for its
	// egress. Each runs the chains of the policies that select the pod.
	prefixPodIn  = "KUBE-NP-IN-"
	prefixPodOut = "KUBE-NP-OUT-"
	// prefixPolicy is a policy's chain per direction, and the chain of an
	// ipBlock with exceptions.
	prefixPolicy = "KUBE-NWPLCY-"

	// A rule's pod peers, when the kernel has ipsets, are a set of type
	// hash:ip: KUBE-NP-SRC-<hash> for an ingress rule (the peers send),
	// KUBE-NP-DST-<hash> for an egress rule, the hash of the policy, the
	// direction, the rule's index and the IP family (sets, unlike
	// chains, are one namespace for both families), named by chainName
	// (28 characters, under ipset's 31).
	prefixSetSrc = "KUBE-NP-SRC-"
	prefixSetDst = "KUBE-NP-DST-"

	// The marks a policy chain sets on packets it allows, one per
	// direction: a packet between two pods of one node passes both.
	markIngress = "0x10000"
	markEgress  = "0x20000"
)

// fixedChains are written on full syncs and when they change.
var fixedChains = []string{chainForward, chainInput}

// isObjectChain reports whether name is a per-pod or per-policy chain of
// ours, which goes when its pod or policy does.
func isObjectChain(name string) bool {
	return strings.HasPrefix(name, prefixPodIn) || strings.HasPrefix(name, prefixPodOut) || strings.HasPrefix(name, prefixPolicy)
}

// isOwnedChain reports whether the enforcer writes a chain of that name.
func isOwnedChain(name string) bool {
	return name == chainForward || name == chainInput || isObjectChain(name)
}

// chainName is prefix and the first 16 characters of the base32 encoding
// of sha256(s), as kube-proxy names its chains (28 characters at most,
// iptables' limit).
func chainName(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// isOwnedSet reports whether the enforcer makes a set of that name.
func isOwnedSet(name string) bool {
	return strings.HasPrefix(name, prefixSetSrc) || strings.HasPrefix(name, prefixSetDst)
}
