package services

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func newService(mutate func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	Default(svc)
	prepareForCreate(svc)
	// What the handler adds on a single-stack IPv4 cluster.
	InitIPFamilies(svc, nil, []corev1.IPFamily{corev1.IPv4Protocol})
	return svc
}

func TestDefault(t *testing.T) {
	svc := newService(nil)
	s := svc.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("type %q affinity %q", s.Type, s.SessionAffinity)
	}
	if s.Ports[0].Protocol != corev1.ProtocolTCP || s.Ports[0].TargetPort != intstr.FromInt32(80) {
		t.Errorf("port = %+v", s.Ports[0])
	}
	if s.InternalTrafficPolicy == nil || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Errorf("internalTrafficPolicy = %v", s.InternalTrafficPolicy)
	}
	if s.ExternalTrafficPolicy != "" {
		t.Errorf("externalTrafficPolicy = %q for ClusterIP", s.ExternalTrafficPolicy)
	}
	bare := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.43.0.9"}}
	Default(bare)
	if bare.Spec.IPFamilyPolicy != nil || bare.Spec.IPFamilies != nil {
		t.Errorf("Default set IP family fields (they depend on the cluster): %v %v", bare.Spec.IPFamilyPolicy, bare.Spec.IPFamilies)
	}
	prepareForCreate(bare)
	if !reflect.DeepEqual(bare.Spec.ClusterIPs, []string{"10.43.0.9"}) {
		t.Errorf("clusterIPs after create = %v, want the clusterIP", bare.Spec.ClusterIPs)
	}

	lb := newService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }).Spec
	if lb.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || lb.AllocateLoadBalancerNodePorts == nil || !*lb.AllocateLoadBalancerNodePorts {
		t.Errorf("load balancer defaults: %+v", lb)
	}

	affinity := newService(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }).Spec
	if *affinity.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
		t.Errorf("affinity timeout = %d", *affinity.SessionAffinityConfig.ClientIP.TimeoutSeconds)
	}

	ext := newService(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = "example.com"
	}).Spec
	if ext.IPFamilyPolicy != nil || ext.InternalTrafficPolicy != nil {
		t.Errorf("external name got IP fields: %+v", ext)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"valid", nil, nil},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"spec.ports"}},
		{"headless without ports", func(s *corev1.Service) { s.Spec.Ports = nil; s.Spec.ClusterIP = "None" }, nil},
		{"port out of range", func(s *corev1.Service) {
			s.Spec.Ports[0].Port = 70000
			s.Spec.Ports[0].TargetPort = intstr.FromInt32(80)
		}, []string{"spec.ports[0].port"}},
		{"unnamed second port", func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "http"
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443})
		}, []string{"spec.ports[1].name"}},
		{"duplicate port", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
		}, []string{"spec.ports[1]"}},
		{"nodePort on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, []string{"spec.ports[0].nodePort"}},
		{"nodePort on NodePort", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 }, nil},
		{"bad clusterIP", func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.300" }, []string{"spec.clusterIPs[0]"}},
		{"bad type", func(s *corev1.Service) { s.Spec.Type = "Ingress" }, []string{"spec.type"}},
		{"external name without name", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, []string{"spec.externalName"}},
		{"external name with trailing dot", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com."
		}, nil},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "-x"} }, []string{"spec.selector"}},
		{"headless node port", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.ClusterIP = "None" }, []string{"spec.clusterIPs[0]"}},
		{"udp protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }, []string{"spec.ports[0].protocol"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(tc.mutate)
			var got []string
			for _, e := range Resource().Validate(svc) {
				got = append(got, e.Field)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("error fields = %v, want %v (%v)", got, tc.want, Resource().Validate(svc))
			}
		})
	}
}

func TestUpdateKeepsAllocatedValues(t *testing.T) {
	old := newService(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ClusterIP = "10.43.0.15"
		s.Spec.Ports[0].NodePort = 30080
	})
	// kubectl apply / replace of the original manifest: no clusterIP, no nodePort.
	svc := newService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	Resource().PrepareForUpdate(svc, old)
	if svc.Spec.ClusterIP != "10.43.0.15" || !reflect.DeepEqual(svc.Spec.ClusterIPs, []string{"10.43.0.15"}) || svc.Spec.Ports[0].NodePort != 30080 {
		t.Errorf("allocated values not kept: %+v", svc.Spec)
	}
	if errs := append(Resource().Validate(svc), Resource().ValidateUpdate(svc, old)...); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
}

func TestUpdateDropsTypeDependentFields(t *testing.T) {
	old := newService(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ClusterIP = "10.43.0.15"
		s.Spec.Ports[0].NodePort = 30080
	})
	svc := old.DeepCopy()
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	Resource().PrepareForUpdate(svc, old)
	if svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("node port fields kept: %+v", svc.Spec)
	}

	toExternal := old.DeepCopy()
	toExternal.Spec.Type = corev1.ServiceTypeExternalName
	toExternal.Spec.ExternalName = "example.com"
	Resource().PrepareForUpdate(toExternal, old)
	if toExternal.Spec.ClusterIP != "" || toExternal.Spec.ClusterIPs != nil || toExternal.Spec.IPFamilies != nil {
		t.Errorf("cluster IP fields kept: %+v", toExternal.Spec)
	}
	if errs := append(Resource().Validate(toExternal), Resource().ValidateUpdate(toExternal, old)...); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
}

func TestValidateUpdateClusterIPImmutable(t *testing.T) {
	old := newService(func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.0.15" })
	svc := old.DeepCopy()
	svc.Spec.ClusterIP = "10.43.0.16"
	svc.Spec.ClusterIPs = []string{"10.43.0.16"}
	errs := Resource().ValidateUpdate(svc, old)
	if len(errs) != 1 || errs[0].Field != "spec.clusterIPs[0]" || !strings.Contains(errs[0].Detail, "may not change once set") {
		t.Errorf("errors = %v", errs)
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	created := metav1.NewTime(now.Add(-5 * 24 * time.Hour))
	cases := []struct {
		name string
		svc  *corev1.Service
		want []interface{}
	}{
		{"cluster ip", newService(func(s *corev1.Service) { s.CreationTimestamp = created; s.Spec.ClusterIP = "10.43.0.1" }),
			[]interface{}{"web", "ClusterIP", "10.43.0.1", "<none>", "80/TCP", "5d", "app=web"}},
		{"node port", newService(func(s *corev1.Service) {
			s.CreationTimestamp = created
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ClusterIP = "10.43.0.2"
			s.Spec.Ports[0].NodePort = 30080
		}), []interface{}{"web", "NodePort", "10.43.0.2", "<none>", "80:30080/TCP", "5d", "app=web"}},
		{"pending load balancer", newService(func(s *corev1.Service) {
			s.CreationTimestamp = created
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Selector = nil
		}), []interface{}{"web", "LoadBalancer", "<none>", "<pending>", "80/TCP", "5d", "<none>"}},
		{"external name", newService(func(s *corev1.Service) {
			s.CreationTimestamp = created
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
			s.Spec.Ports = nil
		}), []interface{}{"web", "ExternalName", "<none>", "example.com", "<none>", "5d", "app=web"}},
	}
	for _, tc := range cases {
		if got := Resource().Row(tc.svc, now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: row = %v, want %v", tc.name, got, tc.want)
		}
	}
}
