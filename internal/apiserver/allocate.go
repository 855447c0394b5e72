package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/cidr"
	"orch/internal/storage"
)

// Service cluster IPs and node ports are reserved as keys in storage, so two
// servers (or two requests) can never hand out the same one.
const (
	clusterIPPrefix = "/registry/orch/serviceips/"
	nodePortPrefix  = "/registry/orch/nodeports/"
	nodePortMin     = 30000
	nodePortMax     = 32767
)

// allocator reserves service cluster IPs and node ports.
type allocator struct {
	store storage.Interface
	// families are those of the service CIDRs, primary first; ranges
	// holds each one's CIDR.
	families []corev1.IPFamily
	ranges   map[corev1.IPFamily]*net.IPNet
}

// newAllocator takes one service CIDR, or two of different families
// (the first being the primary).
func newAllocator(store storage.Interface, cidrs []*net.IPNet) (*allocator, error) {
	if len(cidrs) == 0 || len(cidrs) > 2 {
		return nil, fmt.Errorf("apiserver: one or two service CIDRs are required, got %d", len(cidrs))
	}
	a := &allocator{store: store, ranges: map[corev1.IPFamily]*net.IPNet{}}
	for _, n := range cidrs {
		family := cidr.FamilyOf(n.IP.String())
		if a.ranges[family] != nil {
			return nil, fmt.Errorf("apiserver: service CIDRs %s and %s are both %s", a.ranges[family], n, family)
		}
		a.families = append(a.families, family)
		a.ranges[family] = n
	}
	return a, nil
}

func (a *allocator) reserve(ctx context.Context, key, owner string) (bool, error) {
	_, err := a.store.Create(ctx, key, []byte(owner))
	if errors.Is(err, storage.ErrExists) {
		return false, nil
	}
	return err == nil, err
}

func (a *allocator) release(ctx context.Context, key string) {
	a.store.Delete(ctx, key, 0)
}

func (a *allocator) releaseAll(ctx context.Context, keys []string) {
	for _, key := range keys {
		a.release(ctx, key)
	}
}

// clusterIPs reserves, in ipFamilies order, each cluster IP svc needs that
// old (nil on a create) does not hold: all of them on a create or when a
// service stops being an ExternalName one, the second when a service
// becomes dual-stack. It returns the keys it reserved; on an error it has
// reserved nothing. InitIPFamilies has made sure that the cluster has each
// family.
func (a *allocator) clusterIPs(ctx context.Context, svc, old *corev1.Service, owner string) ([]string, error) {
	if !needsClusterIP(svc) {
		return nil, nil
	}
	held := map[string]bool{}
	if old != nil {
		for _, key := range clusterIPKeys(old) {
			held[key] = true
		}
	}
	ips := make([]string, max(len(svc.Spec.IPFamilies), len(svc.Spec.ClusterIPs)))
	if len(ips) == 0 {
		return nil, errors.New("service " + owner + " has neither ipFamilies nor clusterIPs")
	}
	copy(ips, svc.Spec.ClusterIPs) // not in place: it may be the stored service's
	var reserved []string
	for i, family := range svc.Spec.IPFamilies {
		if ips[i] != "" && held[clusterIPPrefix+ips[i]] {
			continue
		}
		ip, err := a.clusterIP(ctx, family, ips[i], owner, svc.Spec.ClusterIPs)
		if err != nil {
			a.releaseAll(ctx, reserved)
			return nil, err
		}
		ips[i] = ip
		reserved = append(reserved, clusterIPPrefix+ip)
	}
	svc.Spec.ClusterIPs, svc.Spec.ClusterIP = ips, ips[0]
	return reserved, nil
}

// clusterIP reserves ip in family's range, or a free address of it when
// ip is empty. requested is what the client asked for, for errors.
func (a *allocator) clusterIP(ctx context.Context, family corev1.IPFamily, ip, owner string, requested []string) (string, error) {
	cidr := a.ranges[family]
	if cidr == nil {
		return "", field.Invalid(field.NewPath("spec", "ipFamilies"), family, "not configured on this cluster")
	}
	if ip != "" {
		return a.requestedClusterIP(ctx, cidr, ip, owner, requested)
	}
	size := rangeSize(cidr)
	if size < 3 {
		return "", errors.New("the service CIDR " + cidr.String() + " has no free addresses")
	}
	// Random probes first, then a scan from a random start, skipping the
	// network address and the first address (the kubernetes service).
	start := rand.Int64N(size-2) + 2
	for i := int64(0); i < size-2; i++ {
		offset := (start-2+i)%(size-2) + 2
		candidate := addOffset(cidr.IP, offset).String()
		ok, err := a.reserve(ctx, clusterIPPrefix+candidate, owner)
		if err != nil {
			return "", err
		}
		if ok {
			return candidate, nil
		}
	}
	return "", apierrors.NewInternalError(fmt.Errorf("no cluster IPs are left in %s: delete unused services or choose a larger --service-cidr", cidr))
}

// requestedClusterIP reserves the address a client chose, in its
// canonical form, so that two spellings of one IPv6 address are one key.
func (a *allocator) requestedClusterIP(ctx context.Context, cidr *net.IPNet, ip, owner string, requested []string) (string, error) {
	path := field.NewPath("spec", "clusterIPs")
	parsed := net.ParseIP(ip)
	if parsed == nil || !cidr.Contains(parsed) {
		return "", field.Invalid(path, requested, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, ip, cidr))
	}
	ip = parsed.String()
	ok, err := a.reserve(ctx, clusterIPPrefix+ip, owner)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", field.Invalid(path, requested, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip))
	}
	return ip, nil
}

// nodePort reserves port, or a free one when port is 0.
func (a *allocator) nodePort(ctx context.Context, port int32, owner string, path *field.Path) (int32, error) {
	if port != 0 {
		if port < nodePortMin || port > nodePortMax {
			return 0, field.Invalid(path, port, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", nodePortMin, nodePortMax))
		}
		ok, err := a.reserve(ctx, nodePortPrefix+strconv.Itoa(int(port)), owner)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, field.Invalid(path, port, "provided port is already allocated")
		}
		return port, nil
	}
	n := int32(nodePortMax - nodePortMin + 1)
	start := rand.Int32N(n)
	for i := int32(0); i < n; i++ {
		candidate := nodePortMin + (start+i)%n
		ok, err := a.reserve(ctx, nodePortPrefix+strconv.Itoa(int(candidate)), owner)
		if err != nil {
			return 0, err
		}
		if ok {
			return candidate, nil
		}
	}
	return 0, apierrors.NewInternalError(errors.New("no node ports are left in 30000-32767: delete unused NodePort services"))
}

func rangeSize(cidr *net.IPNet) int64 {
	ones, bits := cidr.Mask.Size()
	if bits-ones >= 62 {
		return 1 << 62
	}
	return 1 << (bits - ones)
}

func addOffset(base net.IP, offset int64) net.IP {
	if v4 := base.To4(); v4 != nil {
		base = v4
	}
	n := new(big.Int).SetBytes(base)
	n.Add(n, big.NewInt(offset))
	out := n.FillBytes(make([]byte, len(base)))
	return net.IP(out)
}

// serviceKeys are the storage keys of what svc holds: its cluster IPs and
// node ports.
func serviceKeys(svc *corev1.Service) []string {
	keys := clusterIPKeys(svc)
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			keys = append(keys, nodePortPrefix+strconv.Itoa(int(p.NodePort)))
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		keys = append(keys, nodePortPrefix+strconv.Itoa(int(svc.Spec.HealthCheckNodePort)))
	}
	return keys
}

// clusterIPKeys are the keys of svc's cluster IPs, every family's.
func clusterIPKeys(svc *corev1.Service) []string {
	if !needsClusterIP(svc) {
		return nil
	}
	var keys []string
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone {
			keys = append(keys, clusterIPPrefix+ip)
		}
	}
	return keys
}

// keysNotIn are the keys of a that b does not have.
func keysNotIn(a, b []string) []string {
	var out []string
	for _, key := range a {
		if !slices.Contains(b, key) {
			out = append(out, key)
		}
	}
	return out
}

// needsClusterIP is true for services that get a virtual IP.
func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// hasNodePorts is true for the types whose ports may have node ports.
func hasNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// needsNodePorts is true for services whose ports all get node ports:
// NodePort, and LoadBalancer unless allocateLoadBalancerNodePorts is false.
func needsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}
