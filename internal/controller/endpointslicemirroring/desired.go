package endpointslicemirroring

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// maxEndpointsPerSubset is upstream's default
// --mirroring-max-endpoints-per-subset: the addresses of one subset past it
// are not mirrored.
const maxEndpointsPerSubset = 1000

// shouldMirror is false for Endpoints that ask not to be mirrored (the
// skip-mirror label) and for leader-election records kept in Endpoints.
// Whether their Service exists and has no selector is checked apart.
func shouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return !leader
}

// skipped counts the addresses of an Endpoints that are not mirrored.
type skipped struct {
	// invalid is the addresses whose IP does not parse.
	invalid int
	// tooMany is the addresses past maxEndpointsPerSubset in their subset.
	tooMany int
}

// desiredSlices returns the slices that mirror ep: after the subsets are
// put in canonical form (repack), one slice per subset and address family
// that has addresses, ready addresses ready and not-ready ones not, with
// ep's labels and annotations (see sliceMeta). Endpoints without addresses
// have no slices.
func desiredSlices(ep *corev1.Endpoints) ([]*discoveryv1.EndpointSlice, skipped) {
	var out []*discoveryv1.EndpointSlice
	var sk skipped
	for _, subset := range repack(ep.Subsets) {
		byType := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
		added, invalid := 0, 0
		add := func(addresses []corev1.EndpointAddress, ready bool) {
			for _, a := range addresses {
				if added == maxEndpointsPerSubset {
					return
				}
				e, addressType, ok := endpointFor(a, ready)
				if !ok {
					invalid++
					continue
				}
				byType[addressType] = append(byType[addressType], e)
				added++
			}
		}
		add(subset.Addresses, true)
		add(subset.NotReadyAddresses, false)
		sk.invalid += invalid
		sk.tooMany += len(subset.Addresses) + len(subset.NotReadyAddresses) - added - invalid
		for _, addressType := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			if eps := byType[addressType]; len(eps) > 0 {
				out = append(out, &discoveryv1.EndpointSlice{ObjectMeta: sliceMeta(ep), AddressType: addressType,
					Endpoints: eps, Ports: endpointPorts(subset.Ports)})
			}
		}
	}
	return out, sk
}

// sliceMeta is the metadata of a slice mirroring ep: ep's labels plus
// service-name and managed-by, ep's annotations but the two that describe
// the Endpoints object itself (last-change-trigger-time and kubectl's
// last-applied-configuration), and a controller reference to ep.
func sliceMeta(ep *corev1.Endpoints) metav1.ObjectMeta {
	labels := map[string]string{}
	for k, v := range ep.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = ep.Name
	labels[discoveryv1.LabelManagedBy] = managedBy
	annotations := map[string]string{}
	for k, v := range ep.Annotations {
		if k != corev1.EndpointsLastChangeTriggerTime && k != corev1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	return metav1.ObjectMeta{
		Namespace: ep.Namespace, GenerateName: ep.Name + "-", Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Endpoints", Name: ep.Name, UID: ep.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}
}

// endpointFor turns an address into a slice endpoint, its IP written the
// canonical way; ok is false when the IP does not parse.
func endpointFor(a corev1.EndpointAddress, ready bool) (e discoveryv1.Endpoint, addressType discoveryv1.AddressType, ok bool) {
	ip := netutils.ParseIPSloppy(a.IP)
	if ip == nil {
		return e, "", false
	}
	addressType = discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		addressType = discoveryv1.AddressTypeIPv6
	}
	e = discoveryv1.Endpoint{
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		NodeName:   a.NodeName,
	}
	if a.TargetRef != nil {
		e.TargetRef = a.TargetRef.DeepCopy()
	}
	if a.Hostname != "" {
		e.Hostname = ptr.To(a.Hostname)
	}
	return e, addressType, true
}

func endpointPorts(ports []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port),
			Protocol: ptr.To(p.Protocol), AppProtocol: p.AppProtocol})
	}
	return out
}

// addressKey tells addresses apart as upstream does: by IP and the UID of
// their target, so two pods sharing an IP (host network) stay two.
type addressKey struct {
	ip  string
	uid types.UID
}

func keyOf(a corev1.EndpointAddress) addressKey {
	k := addressKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// repack returns subsets in the canonical form upstream mirrors from
// (upstream's RepackSubsets): every address once per port, not ready if any
// subset lists it not ready for that port, and the ports whose addresses
// (and their readiness) are the same gathered in one subset. The addresses
// of subsets without ports stay, in a subset without ports. Subsets,
// addresses and ports come out sorted.
func repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	first := map[addressKey]corev1.EndpointAddress{}
	ports := map[string]*corev1.EndpointPort{} // "" is the no-port entry
	ready := map[string]map[addressKey]bool{}
	for _, s := range subsets {
		keys := []string{""}
		if len(s.Ports) > 0 {
			keys = keys[:0]
			for i := range s.Ports {
				keys = append(keys, portKey(s.Ports[i]))
				ports[portKey(s.Ports[i])] = &s.Ports[i]
			}
		}
		for _, pk := range keys {
			if ready[pk] == nil {
				ready[pk] = map[addressKey]bool{}
			}
			mark := func(a corev1.EndpointAddress, isReady bool) {
				k := keyOf(a)
				if _, ok := first[k]; !ok {
					first[k] = a
				}
				if was, ok := ready[pk][k]; !ok || was {
					ready[pk][k] = isReady
				}
			}
			for _, a := range s.Addresses {
				mark(a, true)
			}
			for _, a := range s.NotReadyAddresses {
				mark(a, false)
			}
		}
	}
	groups := map[string]*corev1.EndpointSubset{}
	for pk, addrs := range ready {
		if len(addrs) == 0 {
			continue
		}
		keys := make([]addressKey, 0, len(addrs))
		for k := range addrs {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessKey(keys[i], keys[j]) })
		var sig strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&sig, "%s/%s/%v;", k.ip, k.uid, addrs[k])
		}
		g, ok := groups[sig.String()]
		if !ok {
			g = &corev1.EndpointSubset{}
			for _, k := range keys {
				if addrs[k] {
					g.Addresses = append(g.Addresses, first[k])
				} else {
					g.NotReadyAddresses = append(g.NotReadyAddresses, first[k])
				}
			}
			groups[sig.String()] = g
		}
		if pk != "" {
			g.Ports = append(g.Ports, *ports[pk])
		}
	}
	sigs := make([]string, 0, len(groups))
	for sig := range groups {
		sigs = append(sigs, sig)
	}
	sort.Strings(sigs)
	out := make([]corev1.EndpointSubset, 0, len(sigs))
	for _, sig := range sigs {
		g := groups[sig]
		sort.Slice(g.Ports, func(i, j int) bool { return portKey(g.Ports[i]) < portKey(g.Ports[j]) })
		out = append(out, *g)
	}
	return out
}

func lessKey(a, b addressKey) bool {
	if a.ip != b.ip {
		return a.ip < b.ip
	}
	return a.uid < b.uid
}

// portKey identifies an Endpoints port by all of its fields.
func portKey(p corev1.EndpointPort) string {
	return fmt.Sprintf("%s/%d/%s/%s", p.Name, p.Port, p.Protocol, ptr.Deref(p.AppProtocol, "-"))
}
