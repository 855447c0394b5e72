package proxy

import (
	"fmt"
	"net"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// syntheticService makes service i: ClusterIP 10.43.x.y port 80, one
// EndpointSlice with perSvc endpoints on 10.x.y.z:8080, alternately on this
// node and another.
func syntheticService(i, perSvc int) (*v1.Service, *discovery.EndpointSlice) {
	name := fmt.Sprintf("svc-%05d", i)
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: fmt.Sprintf("10.43.%d.%d", i/250, i%250+1),
			Ports:     []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}},
		},
	}
	sl := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: name + "-1", Labels: map[string]string{discovery.LabelServiceName: name}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	for j := range perSvc {
		node := testNode
		if j%2 == 1 {
			node = "node-b"
		}
		n := i*perSvc + j
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{
			Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+n/62500, n/250%250, n%250+1)},
			NodeName:  ptr.To(node),
		})
	}
	return svc, sl
}

// syntheticInput makes n services with perSvc endpoints each.
func syntheticInput(n, perSvc int) Input {
	in := Input{NodeName: testNode, NodeIPs: []net.IP{testNodeIP}, ClusterCIDR: testCIDR}
	for i := range n {
		s, sl := syntheticService(i, perSvc)
		in.Services = append(in.Services, s)
		in.Slices = append(in.Slices, sl)
	}
	return in
}
