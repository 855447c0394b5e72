package services

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var (
	v4Only = []corev1.IPFamily{corev1.IPv4Protocol}
	v6Only = []corev1.IPFamily{corev1.IPv6Protocol}
	v4v6   = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	v6v4   = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
)

// familySpec builds a ClusterIP service spec for the family table.
type familySpec struct {
	typ      corev1.ServiceType
	policy   corev1.IPFamilyPolicy
	families []corev1.IPFamily
	ips      []string
	headless bool // clusterIP None, no selector
}

func (f familySpec) service() *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: f.typ, Selector: map[string]string{"app": "web"}, IPFamilies: f.families, ClusterIPs: f.ips}}
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if f.policy != "" {
		svc.Spec.IPFamilyPolicy = ptr.To(f.policy)
	}
	if len(f.ips) > 0 {
		svc.Spec.ClusterIP = f.ips[0]
	}
	if f.headless {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.Selector = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}, nil
	}
	return svc
}

func TestInitIPFamilies(t *testing.T) {
	const (
		single  = corev1.IPFamilyPolicySingleStack
		prefer  = corev1.IPFamilyPolicyPreferDualStack
		require = corev1.IPFamilyPolicyRequireDualStack
	)
	dualStored := &familySpec{policy: require, families: v4v6, ips: []string{"10.43.0.5", "fd00:43::5"}}
	preferStored := &familySpec{policy: prefer, families: v4Only, ips: []string{"10.43.0.5"}}
	singleStored := &familySpec{policy: single, families: v4Only, ips: []string{"10.43.0.5"}}
	cases := []struct {
		name    string
		cluster []corev1.IPFamily
		svc     familySpec
		old     *familySpec // nil: a create
		// What the service has after (when no error is wanted).
		policy   corev1.IPFamilyPolicy
		families []corev1.IPFamily
		ips      []string
		// The wanted error: its field and part of its detail.
		errField, errDetail string
	}{
		// Creates on a single-stack IPv4 cluster.
		{name: "default", cluster: v4Only, policy: single, families: v4Only},
		{name: "family from the given IP", cluster: v4Only, svc: familySpec{ips: []string{"10.43.0.7"}}, policy: single, families: v4Only, ips: []string{"10.43.0.7"}},
		{name: "prefer dual stack degrades", cluster: v4Only, svc: familySpec{policy: prefer}, policy: prefer, families: v4Only},
		{name: "require dual stack refused", cluster: v4Only, svc: familySpec{policy: require},
			errField: "spec.ipFamilyPolicy", errDetail: "this cluster is not configured for dual-stack services"},
		{name: "IPv6 refused", cluster: v4Only, svc: familySpec{families: v6Only},
			errField: "spec.ipFamilies[0]", errDetail: "not configured on this cluster"},
		{name: "IPv6 cluster IP refused", cluster: v4Only, svc: familySpec{ips: []string{"fd00:43::7"}},
			errField: "spec.clusterIPs[0]", errDetail: "IPv6 is not configured on this cluster"},
		{name: "headless without selector gets both", cluster: v4Only, svc: familySpec{headless: true},
			policy: require, families: v4v6, ips: []string{"None"}},
		{name: "headless without selector may ask for IPv6 first", cluster: v4Only, svc: familySpec{headless: true, families: v6Only},
			policy: require, families: v6v4, ips: []string{"None"}},
		{name: "single-stack headless without selector", cluster: v4Only, svc: familySpec{headless: true, policy: single},
			policy: single, families: v4Only, ips: []string{"None"}},
		{name: "external name untouched", cluster: v4v6, svc: familySpec{typ: corev1.ServiceTypeExternalName}},

		// Creates on dual-stack clusters.
		{name: "dual: default is the primary", cluster: v4v6, policy: single, families: v4Only},
		{name: "IPv6-primary dual: default is IPv6", cluster: v6v4, policy: single, families: v6Only},
		{name: "dual: single-stack IPv6", cluster: v4v6, svc: familySpec{families: v6Only}, policy: single, families: v6Only},
		{name: "dual: prefer", cluster: v4v6, svc: familySpec{policy: prefer}, policy: prefer, families: v4v6},
		{name: "dual: require", cluster: v4v6, svc: familySpec{policy: require}, policy: require, families: v4v6},
		{name: "dual: require, IPv6 first", cluster: v4v6, svc: familySpec{policy: require, families: v6Only}, policy: require, families: v6v4},
		{name: "dual: families from two given IPs", cluster: v4v6, svc: familySpec{policy: prefer, ips: []string{"fd00:43::7", "10.43.0.7"}},
			policy: prefer, families: v6v4, ips: []string{"fd00:43::7", "10.43.0.7"}},
		{name: "dual: single stack with two families", cluster: v4v6, svc: familySpec{policy: single, families: v4v6},
			errField: "spec.ipFamilyPolicy", errDetail: "when multiple IP families are specified"},
		{name: "dual: single stack with two IPs", cluster: v4v6, svc: familySpec{policy: single, ips: []string{"10.43.0.7", "fd00:43::7"}},
			errField: "spec.ipFamilyPolicy", errDetail: "when multiple cluster IPs are specified"},
		{name: "dual: IP not of its family", cluster: v4v6, svc: familySpec{families: v6Only, ips: []string{"10.43.0.7"}},
			errField: "spec.clusterIPs[0]", errDetail: "expected an IPv6 value"},

		// Updates.
		{name: "update keeps the stored policy", cluster: v4v6, svc: familySpec{ips: dualStored.ips}, old: dualStored,
			policy: require, families: v4v6, ips: dualStored.ips},
		{name: "upgrade to prefer", cluster: v4v6, svc: familySpec{policy: prefer, families: v4Only, ips: []string{"10.43.0.5"}}, old: singleStored,
			policy: prefer, families: v4v6, ips: []string{"10.43.0.5"}},
		{name: "upgrade to require", cluster: v4v6, svc: familySpec{policy: require, families: v4Only, ips: []string{"10.43.0.5"}}, old: singleStored,
			policy: require, families: v4v6, ips: []string{"10.43.0.5"}},
		{name: "upgrade refused on a single-stack cluster", cluster: v4Only, svc: familySpec{policy: require, families: v4Only, ips: []string{"10.43.0.5"}}, old: singleStored,
			errField: "spec.ipFamilyPolicy", errDetail: "not configured for dual-stack"},
		{name: "prefer stays single-stack when the cluster becomes dual", cluster: v4v6, svc: *preferStored, old: preferStored,
			policy: prefer, families: v4Only, ips: []string{"10.43.0.5"}},
		{name: "downgrade by policy alone", cluster: v4v6, svc: familySpec{policy: single, families: v4v6, ips: dualStored.ips}, old: dualStored,
			policy: single, families: v4Only, ips: []string{"10.43.0.5"}},
		{name: "downgrade dropping the second values", cluster: v4v6, svc: familySpec{policy: single, families: v4Only, ips: []string{"10.43.0.5"}}, old: dualStored,
			policy: single, families: v4Only, ips: []string{"10.43.0.5"}},
		{name: "dropping an IP without SingleStack", cluster: v4v6, svc: familySpec{policy: require, families: v4v6, ips: []string{"10.43.0.5"}}, old: dualStored,
			errField: "spec.ipFamilyPolicy", errDetail: "must be 'SingleStack' to release the secondary cluster IP"},
		{name: "dropping a family without SingleStack", cluster: v4v6, svc: familySpec{policy: prefer, families: v4Only, ips: dualStored.ips}, old: dualStored,
			errField: "spec.ipFamilyPolicy", errDetail: "must be 'SingleStack' to release the secondary IP family"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc.service()
			var old *corev1.Service
			if tc.old != nil {
				old = tc.old.service()
			}
			var stored *corev1.Service
			if old != nil {
				stored = old.DeepCopy()
			}
			errs := InitIPFamilies(svc, old, tc.cluster)
			if tc.errField != "" {
				if len(errs) != 1 || errs[0].Field != tc.errField || !strings.Contains(errs[0].Detail, tc.errDetail) {
					t.Fatalf("errors = %v, want one at %s saying %q", errs, tc.errField, tc.errDetail)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if got := ptr.Deref(svc.Spec.IPFamilyPolicy, ""); got != tc.policy {
				t.Errorf("ipFamilyPolicy = %q, want %q", got, tc.policy)
			}
			if !reflect.DeepEqual(svc.Spec.IPFamilies, tc.families) {
				t.Errorf("ipFamilies = %v, want %v", svc.Spec.IPFamilies, tc.families)
			}
			if !reflect.DeepEqual(svc.Spec.ClusterIPs, tc.ips) {
				t.Errorf("clusterIPs = %v, want %v", svc.Spec.ClusterIPs, tc.ips)
			}
			if old != nil && !reflect.DeepEqual(old, stored) {
				t.Errorf("the stored service was changed: %+v", old.Spec)
			}
		})
	}
}

func TestValidateUpdateFamilies(t *testing.T) {
	dual := familySpec{policy: corev1.IPFamilyPolicyRequireDualStack, families: v4v6, ips: []string{"10.43.0.5", "fd00:43::5"}}.service()
	cases := []struct {
		name       string
		svc        familySpec
		errFields  []string
		errDetails []string
	}{
		{"unchanged", familySpec{policy: corev1.IPFamilyPolicyRequireDualStack, families: v4v6, ips: []string{"10.43.0.5", "fd00:43::5"}}, nil, nil},
		{"downgrade", familySpec{policy: corev1.IPFamilyPolicySingleStack, families: v4Only, ips: []string{"10.43.0.5"}}, nil, nil},
		{"secondary IP changed", familySpec{policy: corev1.IPFamilyPolicyRequireDualStack, families: v4v6, ips: []string{"10.43.0.5", "fd00:43::6"}},
			[]string{"spec.clusterIPs[1]"}, []string{"may not change once set"}},
		{"primary family changed", familySpec{policy: corev1.IPFamilyPolicyRequireDualStack, families: v6v4, ips: []string{"fd00:43::5", "10.43.0.5"}},
			[]string{"spec.clusterIPs[0]", "spec.clusterIPs[1]", "spec.ipFamilies[0]"}, []string{"may not change", "may not change", "may not change"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateUpdate(tc.svc.service(), dual)
			var fields, details []string
			for _, e := range errs {
				fields = append(fields, e.Field)
				details = append(details, e.Detail)
			}
			if !reflect.DeepEqual(fields, tc.errFields) {
				t.Fatalf("error fields = %v, want %v (%v)", fields, tc.errFields, errs)
			}
			for i := range details {
				if !strings.Contains(details[i], tc.errDetails[i]) {
					t.Errorf("%s: %q does not say %q", fields[i], details[i], tc.errDetails[i])
				}
			}
		})
	}
}
