package ingresses

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func svc(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func rule(host, path string, pathType *networkingv1.PathType, b networkingv1.IngressBackend) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: pathType, Backend: b}},
	}}}
}

func TestValidate(t *testing.T) {
	r := Resource()
	prefix := ptr.To(networkingv1.PathTypePrefix)
	both := svc("web", 80)
	both.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}
	tests := []struct {
		name string
		spec networkingv1.IngressSpec
		want []string
	}{
		{"simple", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("example.com", "/", prefix, svc("web", 80))}}, nil},
		{"default backend only", networkingv1.IngressSpec{DefaultBackend: ptr.To(svc("web", 80))}, nil},
		{"nothing", networkingv1.IngressSpec{}, []string{"FieldValueInvalid spec"}},
		{"no path type", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("", "/", nil, svc("web", 80))}}, []string{"FieldValueRequired spec.rules[0].http.paths[0].pathType"}},
		{"relative path", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("", "api", prefix, svc("web", 80))}}, []string{"FieldValueInvalid spec.rules[0].http.paths[0].path"}},
		{"ip host", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("10.0.0.1", "/", prefix, svc("web", 80))}}, []string{"FieldValueInvalid spec.rules[0].host"}},
		{"wildcard host", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("*.example.com", "/", prefix, svc("web", 80))}}, nil},
		{"no port", networkingv1.IngressSpec{DefaultBackend: ptr.To(svc("web", 0))}, []string{"FieldValueRequired spec.defaultBackend"}},
		{"two backends", networkingv1.IngressSpec{DefaultBackend: &both}, []string{"FieldValueInvalid spec.defaultBackend"}},
		{"bad service name", networkingv1.IngressSpec{DefaultBackend: ptr.To(svc("1web", 80))}, []string{"FieldValueInvalid spec.defaultBackend.service.name"}},
		{"bad tls secret", networkingv1.IngressSpec{DefaultBackend: ptr.To(svc("web", 80)), TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.b"}, SecretName: "Bad_Name"}}}, []string{"FieldValueInvalid spec.tls[0].secretName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, &networkingv1.Ingress{Spec: tt.spec}, nil), tt.want...)
		})
	}

	annotated := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{classAnnotation: "nginx"}},
		Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To("traefik"), DefaultBackend: ptr.To(svc("web", 80))},
	}
	registrytest.ExpectErrors(t, registrytest.Validate(r, annotated, nil), "FieldValueInvalid annotations.kubernetes.io/ingress.class")
}

func TestRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.ShortNames[0] != "ing" {
		t.Errorf("HasStatus %v, short names %v", r.HasStatus, r.ShortNames)
	}
	now := time.Now()
	prefix := ptr.To(networkingv1.PathTypePrefix)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Minute))},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("traefik"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}}},
			Rules: []networkingv1.IngressRule{
				rule("a.example.com", "/", prefix, svc("web", 80)), rule("b.example.com", "/", prefix, svc("web", 80)),
				rule("", "/", prefix, svc("web", 80)), rule("d.example.com", "/", prefix, svc("web", 80)),
			},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}, {IP: "10.0.0.2"}}}},
	}
	row := r.Row(ing, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web", "traefik", "a.example.com,b.example.com,d.example.com", "10.0.0.2,10.0.0.9", "80, 443", "3m"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	for _, h := range []string{"e.example.com", "f.example.com"} {
		ing.Spec.Rules = append(ing.Spec.Rules, rule(h, "/", prefix, svc("web", 80)))
	}
	if got := r.Row(ing, now)[2]; got != "a.example.com,b.example.com,d.example.com + 3 more..." {
		t.Errorf("hosts = %q", got)
	}
	row = r.Row(&networkingv1.Ingress{}, now)
	if row[1] != "<none>" || row[2] != "*" || row[3] != "" || row[4] != "80" {
		t.Errorf("empty ingress row = %#v", row)
	}
}
