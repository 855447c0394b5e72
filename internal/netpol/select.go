package netpol

import (
	"net"
	"sort"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/cidr"
	"orch/internal/iptsync"
)

// pod is what the rules need of a pod that has an address on the pod
// network.
type pod struct {
	key       string // namespace/name
	namespace string
	ip        string // of the family of the rules being built
	node      string
	labels    labels.Set
	ports     []v1.ContainerPort
}

// podsOf keeps the pods a policy can select or name as a peer in family
// f: those on the pod network (not hostNetwork) with an address of f that
// have not ended, sorted by namespace/name.
func podsOf(list []*v1.Pod, f iptsync.Family) []*pod {
	var out []*pod
	for _, p := range list {
		if p.Spec.HostNetwork || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		ip := cidr.PodIPOf(p, f.IPFamily())
		if ip == "" {
			continue
		}
		q := &pod{key: p.Namespace + "/" + p.Name, namespace: p.Namespace, ip: ip, node: p.Spec.NodeName, labels: labels.Set(p.Labels)}
		for _, c := range p.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways { // sidecars serve too
				q.ports = append(q.ports, c.Ports...)
			}
		}
		for _, c := range p.Spec.Containers {
			q.ports = append(q.ports, c.Ports...)
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// namedPort resolves a port name on a pod, for protocol; 0 when the pod
// has no such port.
func (p *pod) namedPort(name string, protocol v1.Protocol) int32 {
	for _, cp := range p.ports {
		proto := cp.Protocol
		if proto == "" {
			proto = v1.ProtocolTCP
		}
		if cp.Name == name && proto == protocol {
			return cp.ContainerPort
		}
	}
	return 0
}

// selector turns a label selector into a labels.Selector; an invalid one
// (the API refuses them) selects nothing.
func selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// policyTypes are the policy's types, defaulted as the API does when
// empty: Ingress, and Egress when it has egress rules.
func policyTypes(p *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(p.Spec.PolicyTypes) == 0 {
		return true, len(p.Spec.Egress) > 0
	}
	for _, t := range p.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// peer is one side a rule allows: any address (cidr ""), an ipBlock (cidr
// with exceptions), a pod (its address, /32 or /128), or the set of a
// rule's pods.
type peer struct {
	cidr   string
	except []string
	pod    *pod
	set    bool
}

// peers expands a rule's peers in namespace ns for the rules of family f
// (pods holds that family's addresses): no peers is anyone.
func peers(from []networkingv1.NetworkPolicyPeer, ns string, pods []*pod, nsLabels map[string]labels.Set, f iptsync.Family) []peer {
	if len(from) == 0 {
		return []peer{{}}
	}
	var out []peer
	for _, pe := range from {
		if b := pe.IPBlock; b != nil {
			block := netsOf([]string{b.CIDR}, f)
			if len(block) == 0 {
				continue // a block of the other family: its rules have it
			}
			out = append(out, peer{cidr: block[0], except: netsOf(b.Except, f)})
			continue
		}
		podSel := labels.Everything()
		if pe.PodSelector != nil {
			podSel = selector(pe.PodSelector)
		}
		var nsSel labels.Selector
		if pe.NamespaceSelector != nil {
			nsSel = selector(pe.NamespaceSelector)
		}
		for _, q := range pods {
			if nsSel == nil && q.namespace != ns {
				continue
			}
			if nsSel != nil && !nsSel.Matches(nsLabels[q.namespace]) {
				continue
			}
			if podSel.Matches(q.labels) {
				out = append(out, peer{cidr: q.ip + hostBits(f), pod: q})
			}
		}
	}
	return out
}

// contains reports whether ip is inside p's block and outside its exceptions.
func (p peer) contains(ip string) bool {
	if p.cidr == "" {
		return true
	}
	addr := net.ParseIP(ip)
	if _, n, err := net.ParseCIDR(p.cidr); err != nil || !n.Contains(addr) {
		return false
	}
	for _, e := range p.except {
		if _, n, err := net.ParseCIDR(e); err == nil && n.Contains(addr) {
			return false
		}
	}
	return true
}
