package ingress

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/routing"
)

func class(name, controller string, isDefault bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
	if isDefault {
		c.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}
	}
	return c
}

func service(name string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.ServiceSpec{Ports: ports}}
}

// slice of service name with endpoints ip → ready, on port (named portName).
func slice(svc, portName string, port int32, eps map[string]bool) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svc + "-x", Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	for ip, ready := range eps {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{ip},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(true)}})
	}
	return s
}

func pathRule(p string, typ networkingv1.PathType, svc string, port int32) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: p, PathType: ptr.To(typ), Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}}}
}

func ingress(name string, age time.Duration, className *string, rules ...networkingv1.IngressRule) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec:       networkingv1.IngressSpec{IngressClassName: className, Rules: rules},
	}
}

func rule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
}

func TestMatch(t *testing.T) {
	ours := ptr.To(ClassName)
	old := ingress("old", time.Hour, ours,
		rule("web.example", pathRule("/", networkingv1.PathTypePrefix, "web", 80), pathRule("/api", networkingv1.PathTypePrefix, "api", 80),
			pathRule("/api/v2", networkingv1.PathTypeImplementationSpecific, "v2", 80), pathRule("/exact", networkingv1.PathTypeExact, "exact", 80)),
		rule("*.wild.example", pathRule("/", networkingv1.PathTypePrefix, "wild", 80)),
		rule("", pathRule("/any", networkingv1.PathTypePrefix, "any", 80)))
	old.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "fallback", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	young := ingress("young", time.Minute, nil, // no class: the default class's
		rule("web.example", pathRule("/api", networkingv1.PathTypePrefix, "young", 80), pathRule("/young", networkingv1.PathTypePrefix, "young", 80)))
	other := ingress("other", 2*time.Hour, ptr.To("nginx"), rule("web.example", pathRule("/", networkingv1.PathTypePrefix, "nginx", 80)))
	in := Input{
		Ingresses: []*networkingv1.Ingress{young, other, old},
		Classes:   []*networkingv1.IngressClass{class(ClassName, Controller, true), class("nginx", "k8s.io/ingress-nginx", false)},
	}
	for _, name := range []string{"web", "api", "v2", "exact", "wild", "any", "fallback", "young", "nginx"} {
		in.Services = append(in.Services, service(name, v1.ServicePort{Name: "http", Port: 80}))
		in.Slices = append(in.Slices, slice(name, "http", 8080, map[string]bool{"10.42.0.1": true}))
	}
	tab := table(Build(in))
	for _, tc := range []struct{ host, path, want string }{
		{"web.example", "/", "web"},
		{"WEB.example", "/index.html", "web"},
		{"web.example", "/api", "api"},        // the older Ingress wins the same path
		{"web.example", "/api/users", "api"},  // by path element
		{"web.example", "/api/", "api"},       // a trailing slash
		{"web.example", "/apiary", "web"},     // not a prefix element
		{"web.example", "/api/v2/x", "v2"},    // ImplementationSpecific is Prefix; longest wins
		{"web.example", "/exact", "exact"},    // Exact
		{"web.example", "/exact/more", "web"}, // Exact matches only itself
		{"web.example", "/young/x", "young"},  // a class-less Ingress is the default class's
		{"a.wild.example", "/", "wild"},       // one label for *
		{"a.b.wild.example", "/", "fallback"}, // not two
		{"other.example", "/any/x", "any"},    // rules without a host
		{"other.example", "/none", "fallback"},
	} {
		if b := backendOf(match(tab, tc.host, tc.path)); b == nil || b.Service != "default/"+tc.want+":80" {
			t.Errorf("Match(%q, %q) = %+v, want Service default/%s:80", tc.host, tc.path, b, tc.want)
		}
	}
	if rl := match(tab, "web.example", "/"); rl.Source.Name != "default/old" || len(rl.Backends[0].Endpoints) != 1 || rl.Backends[0].Endpoints[0] != "10.42.0.1:8080" {
		t.Errorf("web rule = %+v, want Ingress default/old and endpoint 10.42.0.1:8080 (the slice's port of the service port's name)", rl)
	}
}

func TestEndpoints(t *testing.T) {
	ing := ingress("web", time.Hour, ptr.To(ClassName), rule("", pathRule("/", networkingv1.PathTypePrefix, "web", 80)))
	classes := []*networkingv1.IngressClass{class(ClassName, Controller, false)}
	svc := service("web", v1.ServicePort{Name: "http", Port: 80})
	for _, tc := range []struct {
		name   string
		slices []*discovery.EndpointSlice
		want   []string
	}{
		{"ready ones only", []*discovery.EndpointSlice{slice("web", "http", 8080, map[string]bool{"10.42.0.2": true, "10.42.0.1": true, "10.42.0.3": false})},
			[]string{"10.42.0.1:8080", "10.42.0.2:8080"}},
		{"serving terminating ones when none is ready", []*discovery.EndpointSlice{slice("web", "http", 8080, map[string]bool{"10.42.0.3": false})},
			[]string{"10.42.0.3:8080"}},
		{"another port's slice", []*discovery.EndpointSlice{slice("web", "metrics", 9090, map[string]bool{"10.42.0.1": true})}, nil},
		{"no slices", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backendOf(match(table(Build(Input{Ingresses: []*networkingv1.Ingress{ing}, Classes: classes, Services: []*v1.Service{svc}, Slices: tc.slices})), "x", "/"))
			if b == nil || len(b.Endpoints) != len(tc.want) {
				t.Fatalf("backend %+v, want endpoints %v", b, tc.want)
			}
			for i := range tc.want {
				if b.Endpoints[i] != tc.want[i] {
					t.Errorf("endpoints %v, want %v", b.Endpoints, tc.want)
				}
			}
		})
	}
	// Not ours: no class of ours, or no default class.
	if b := match(table(Build(Input{Ingresses: []*networkingv1.Ingress{ingress("x", 0, nil, rule("", pathRule("/", networkingv1.PathTypePrefix, "web", 80)))},
		Classes: classes})), "x", "/"); b != nil {
		t.Errorf("a class-less Ingress without a default class was served: %+v", b)
	}
}

// table is the routing table of the Ingresses alone.
func table(r *Routes) *routing.Table { return routing.NewTable(r.Rules, r.Fallback) }

func match(tab *routing.Table, host, path string) *routing.Rule {
	return tab.Match(httptest.NewRequest(http.MethodGet, "http://"+host+path, nil))
}

func backendOf(rl *routing.Rule) *routing.Backend {
	if rl == nil || len(rl.Backends) == 0 {
		return nil
	}
	return rl.Backends[0].Backend
}
