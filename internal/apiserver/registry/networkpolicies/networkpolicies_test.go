package networkpolicies

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func TestDefault(t *testing.T) {
	r := Resource()
	np := &networkingv1.NetworkPolicy{}
	r.Default(np)
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes = %v", np.Spec.PolicyTypes)
	}
	egress := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(53))}}}},
	}}
	r.Default(egress)
	if len(egress.Spec.PolicyTypes) != 2 || egress.Spec.PolicyTypes[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes = %v", egress.Spec.PolicyTypes)
	}
	if p := egress.Spec.Egress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("protocol = %v", p)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	port := func(p intstr.IntOrString, end *int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: &p, EndPort: end}
	}
	ingress := func(ports []networkingv1.NetworkPolicyPort, from ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicySpec {
		return networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: ports, From: from}}}
	}
	tests := []struct {
		name string
		spec networkingv1.NetworkPolicySpec
		want []string
	}{
		{"deny all", networkingv1.NetworkPolicySpec{}, nil},
		{"port range", ingress([]networkingv1.NetworkPolicyPort{port(intstr.FromInt32(8000), ptr.To[int32](9000))}), nil},
		{"named port", ingress([]networkingv1.NetworkPolicyPort{port(intstr.FromString("http"), nil)}), nil},
		{"bad port", ingress([]networkingv1.NetworkPolicyPort{port(intstr.FromInt32(70000), nil)}), []string{"FieldValueInvalid spec.ingress[0].ports[0].port"}},
		{"end before port", ingress([]networkingv1.NetworkPolicyPort{port(intstr.FromInt32(90), ptr.To[int32](80))}), []string{"FieldValueInvalid spec.ingress[0].ports[0].endPort"}},
		{"end with named port", ingress([]networkingv1.NetworkPolicyPort{port(intstr.FromString("http"), ptr.To[int32](80))}), []string{"FieldValueInvalid spec.ingress[0].ports[0].endPort"}},
		{"empty peer", ingress(nil, networkingv1.NetworkPolicyPeer{}), []string{"FieldValueRequired spec.ingress[0].from[0]"}},
		{"ipBlock with selector", ingress(nil, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, PodSelector: &metav1.LabelSelector{}}), []string{"FieldValueForbidden spec.ingress[0].from[0]"}},
		{"bad cidr", ingress(nil, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0"}}), []string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.cidr"}},
		{"except outside", ingress(nil, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"11.0.0.0/16"}}}), []string{"FieldValueInvalid spec.ingress[0].from[0].ipBlock.except[0]"}},
		{"except inside", ingress(nil, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}), nil},
		{"bad policy type", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Sideways"}}, []string{"FieldValueNotSupported spec.policyTypes[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, &networkingv1.NetworkPolicy{Spec: tt.spec}, nil), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "db", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	row := r.Row(np, now)
	registrytest.CheckTable(t, r, row)
	if row[0] != "db" || row[1] != "app=db" || row[2] != "2m" {
		t.Errorf("row = %v", row)
	}
	if row := r.Row(&networkingv1.NetworkPolicy{}, now); row[1] != "<none>" {
		t.Errorf("empty selector shows %q", row[1])
	}
}
