package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
	cidr  *net.IPNet
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

// clusterIP reserves ip, or a free address when ip is empty.
func (a *allocator) clusterIP(ctx context.Context, ip, owner string, path *field.Path) (string, error) {
	if ip != "" {
		parsed := net.ParseIP(ip)
		if parsed == nil || !a.cidr.Contains(parsed) {
			return "", field.Invalid(path, ip, fmt.Sprintf("provided IP is not in the valid range. The range of valid IPs is %s", a.cidr))
		}
		ok, err := a.reserve(ctx, clusterIPPrefix+ip, owner)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", field.Invalid(path, ip, "provided IP is already allocated")
		}
		return ip, nil
	}
	size := rangeSize(a.cidr)
	if size < 3 {
		return "", errors.New("the service CIDR " + a.cidr.String() + " has no free addresses")
	}
	// Random probes first, then a scan from a random start, skipping the
	// network address and the first address (the kubernetes service).
	start := rand.Int64N(size-2) + 2
	for i := int64(0); i < size-2; i++ {
		offset := (start-2+i)%(size-2) + 2
		candidate := addOffset(a.cidr.IP, offset).String()
		ok, err := a.reserve(ctx, clusterIPPrefix+candidate, owner)
		if err != nil {
			return "", err
		}
		if ok {
			return candidate, nil
		}
	}
	return "", apierrors.NewInternalError(fmt.Errorf("no cluster IPs are left in %s: delete unused services or choose a larger --service-cidr", a.cidr))
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

// needsClusterIP is true for services that get a virtual IP.
func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// needsNodePorts is true for NodePort and LoadBalancer services.
func needsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}
