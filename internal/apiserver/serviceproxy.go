package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// serviceEndpoint picks a ready endpoint of service name's port (a port
// name, a port number, or "" for the unnamed port) from its
// EndpointSlices, as upstream's services/proxy does: only endpoints whose
// target pod in the namespace has the address count. It returns host:port.
func (s *Server) serviceEndpoint(ctx context.Context, rs *resourceStore, namespace, name, port string) (string, error) {
	obj, err := rs.get(ctx, namespace, name)
	if isNotFound(err) {
		return "", apierrors.NewNotFound(rs.gr, name)
	}
	if err != nil {
		return "", err
	}
	svc := obj.(*corev1.Service)
	if n, err := strconv.ParseInt(port, 10, 64); err == nil {
		found := false
		for _, p := range svc.Spec.Ports {
			if int64(p.Port) == n {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	noEndpoints := apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	store := s.resources[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	pods := s.resources[corev1.SchemeGroupVersion.WithResource("pods")]
	if store == nil || pods == nil {
		return "", noEndpoints
	}
	sel, err := store.newSelection(discoveryv1.LabelServiceName+"="+name, "")
	if err != nil {
		return "", err
	}
	list, err := s.listObjects(ctx, store, namespace, metav1.ListOptions{}, sel)
	if err != nil {
		return "", err
	}
	var candidates []string
	eachItem(list, func(o runtime.Object) {
		slice := o.(*discoveryv1.EndpointSlice)
		for _, p := range slice.Ports {
			if p.Name == nil || *p.Name != port || p.Port == nil {
				continue
			}
			for _, ep := range slice.Endpoints {
				if (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) || len(ep.Addresses) == 0 || !s.podHasAddress(ctx, pods, namespace, ep) {
					continue
				}
				candidates = append(candidates, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))))
			}
		}
	})
	if len(candidates) == 0 {
		return "", noEndpoints
	}
	return candidates[rand.IntN(len(candidates))], nil
}

// podHasAddress checks that the endpoint's target is a pod of the
// namespace that has the endpoint's address.
func (s *Server) podHasAddress(ctx context.Context, pods *resourceStore, namespace string, ep discoveryv1.Endpoint) bool {
	if ep.TargetRef == nil || ep.TargetRef.Namespace != namespace {
		return false
	}
	obj, err := pods.get(ctx, namespace, ep.TargetRef.Name)
	if err != nil {
		return false
	}
	pod := obj.(*corev1.Pod)
	return slices.ContainsFunc(pod.Status.PodIPs, func(ip corev1.PodIP) bool { return ip.IP == ep.Addresses[0] })
}
