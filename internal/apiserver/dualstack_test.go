package apiserver_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

var (
	ipv4Only  = []corev1.IPFamily{corev1.IPv4Protocol}
	ipv6Only  = []corev1.IPFamily{corev1.IPv6Protocol}
	ipv4ipv6  = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	ipv6ipv4  = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	serviceV4 = netip.MustParsePrefix("10.43.0.0/16")
	serviceV6 = netip.MustParsePrefix("fd00:43::/112")
)

// familyService is a ClusterIP service with the given policy ("" leaves
// it out), families and cluster IPs.
func familyService(name string, policy corev1.IPFamilyPolicy, families []corev1.IPFamily, ips ...string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}, IPFamilies: families, ClusterIPs: ips,
	}}
	if policy != "" {
		svc.Spec.IPFamilyPolicy = ptr.To(policy)
	}
	if len(ips) > 0 {
		svc.Spec.ClusterIP = ips[0]
	}
	return svc
}

// checkFamilies fails t unless svc has the policy and families, and one
// cluster IP per family, each in that family's service CIDR.
func checkFamilies(t *testing.T, svc *corev1.Service, policy corev1.IPFamilyPolicy, families []corev1.IPFamily) {
	t.Helper()
	s := svc.Spec
	if ptr.Deref(s.IPFamilyPolicy, "") != policy || !reflect.DeepEqual(s.IPFamilies, families) {
		t.Fatalf("%s: ipFamilyPolicy %v ipFamilies %v, want %v %v", svc.Name, ptr.Deref(s.IPFamilyPolicy, ""), s.IPFamilies, policy, families)
	}
	if len(s.ClusterIPs) != len(families) || s.ClusterIP != s.ClusterIPs[0] {
		t.Fatalf("%s: clusterIP %q clusterIPs %v, want one per family %v", svc.Name, s.ClusterIP, s.ClusterIPs, families)
	}
	for i, ip := range s.ClusterIPs {
		want := serviceV4
		if families[i] == corev1.IPv6Protocol {
			want = serviceV6
		}
		if addr, err := netip.ParseAddr(ip); err != nil || !want.Contains(addr) {
			t.Errorf("%s: clusterIPs[%d] = %q, not in %s", svc.Name, i, ip, want)
		}
	}
}

// invalidAt fails t unless err is a 422 with a cause at path saying text.
func invalidAt(t *testing.T, err error, path, text string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid at %s", err, path)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == path && strings.Contains(c.Message, text) {
			return
		}
	}
	t.Fatalf("error %v has no cause at %s saying %q", err, path, text)
}

func dualStackClient(t *testing.T, ns string, cidrs ...string) typedcorev1.ServiceInterface {
	t.Helper()
	_, client := newClientWith(t, ns, envtest.Options{ServiceCIDRs: cidrs})
	return client.CoreV1().Services(ns)
}

func TestDualStackServices(t *testing.T) {
	ctx := testContext(t)
	services := dualStackClient(t, "dual", serviceV4.String(), serviceV6.String())
	create := func(svc *corev1.Service) *corev1.Service {
		t.Helper()
		created, err := services.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", svc.Name, err)
		}
		return created
	}

	single := create(familyService("single", "", nil))
	checkFamilies(t, single, corev1.IPFamilyPolicySingleStack, ipv4Only)
	single6 := create(familyService("single6", "", ipv6Only))
	checkFamilies(t, single6, corev1.IPFamilyPolicySingleStack, ipv6Only)
	prefer := create(familyService("prefer", corev1.IPFamilyPolicyPreferDualStack, nil))
	checkFamilies(t, prefer, corev1.IPFamilyPolicyPreferDualStack, ipv4ipv6)
	require6 := create(familyService("require6", corev1.IPFamilyPolicyRequireDualStack, ipv6Only))
	checkFamilies(t, require6, corev1.IPFamilyPolicyRequireDualStack, ipv6ipv4)

	// Both IPs are held: asking for either again is refused.
	_, err := services.Create(ctx, familyService("taken", corev1.IPFamilyPolicyPreferDualStack, nil, "10.43.200.1", prefer.Spec.ClusterIPs[1]), metav1.CreateOptions{})
	invalidAt(t, err, "spec.clusterIPs", "provided IP is already allocated")
	// That failed create gave back the IPv4 address it had reserved.
	chosen := create(familyService("chosen", corev1.IPFamilyPolicyRequireDualStack, nil, "10.43.200.1", "fd00:43::200"))
	checkFamilies(t, chosen, corev1.IPFamilyPolicyRequireDualStack, ipv4ipv6)
	if !reflect.DeepEqual(chosen.Spec.ClusterIPs, []string{"10.43.200.1", "fd00:43::200"}) {
		t.Errorf("chosen clusterIPs = %v", chosen.Spec.ClusterIPs)
	}
	_, err = services.Create(ctx, familyService("outside", "", ipv6Only, "fd00:44::1"), metav1.CreateOptions{})
	invalidAt(t, err, "spec.clusterIPs", "not in the valid range")

	// Upgrade: the service keeps its IP and gains one of the other family.
	single.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	upgraded, err := services.Update(ctx, single, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFamilies(t, upgraded, corev1.IPFamilyPolicyPreferDualStack, ipv4ipv6)
	if upgraded.Spec.ClusterIP != single.Spec.ClusterIP {
		t.Errorf("upgrade moved the primary IP: %s → %s", single.Spec.ClusterIP, upgraded.Spec.ClusterIP)
	}
	// The primary family cannot change.
	flipped := upgraded.DeepCopy()
	flipped.Spec.IPFamilies = ipv6ipv4
	flipped.Spec.ClusterIPs = []string{upgraded.Spec.ClusterIPs[1], upgraded.Spec.ClusterIPs[0]}
	flipped.Spec.ClusterIP = flipped.Spec.ClusterIPs[0]
	_, err = services.Update(ctx, flipped, metav1.UpdateOptions{})
	invalidAt(t, err, "spec.clusterIPs[0]", "may not change once set")
	// Dropping the second IP takes SingleStack.
	dropped := upgraded.DeepCopy()
	dropped.Spec.ClusterIPs, dropped.Spec.IPFamilies = dropped.Spec.ClusterIPs[:1], ipv4Only
	_, err = services.Update(ctx, dropped, metav1.UpdateOptions{})
	invalidAt(t, err, "spec.ipFamilyPolicy", "SingleStack")
	// Downgrade as upstream requires: the second IP is given back.
	dropped.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	downgraded, err := services.Update(ctx, dropped, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFamilies(t, downgraded, corev1.IPFamilyPolicySingleStack, ipv4Only)
	create(familyService("reuse-secondary", "", ipv6Only, upgraded.Spec.ClusterIPs[1]))

	// A downgrade by policy alone (upstream reads it as the intent).
	require6.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	byPolicy, err := services.Update(ctx, require6, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFamilies(t, byPolicy, corev1.IPFamilyPolicySingleStack, ipv6Only)
	create(familyService("reuse-dropped", "", ipv4Only, require6.Spec.ClusterIPs[1]))

	// Becoming an ExternalName service gives back both IPs.
	external := prefer.DeepCopy()
	external.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	if _, err := services.Update(ctx, external, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(familyService("reuse-external", corev1.IPFamilyPolicyRequireDualStack, nil, prefer.Spec.ClusterIPs...))

	// Deleting a dual-stack service gives back both IPs.
	if err := services.Delete(ctx, "chosen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create(familyService("reuse-deleted", corev1.IPFamilyPolicyRequireDualStack, nil, chosen.Spec.ClusterIPs...))

	// A dry run settles the families and reserves nothing.
	dry, err := services.Create(ctx, familyService("dry", corev1.IPFamilyPolicyRequireDualStack, ipv6Only), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || !reflect.DeepEqual(dry.Spec.IPFamilies, ipv6ipv4) {
		t.Fatalf("dry run: %v, %v", dry, err)
	}
}

func TestSingleStackClusterRefusesOtherFamilies(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "single")
	services := client.CoreV1().Services("single")
	_, err := services.Create(ctx, familyService("v6", "", ipv6Only), metav1.CreateOptions{})
	invalidAt(t, err, "spec.ipFamilies[0]", "not configured on this cluster")
	_, err = services.Create(ctx, familyService("v6ip", "", nil, "fd00:43::5"), metav1.CreateOptions{})
	invalidAt(t, err, "spec.clusterIPs[0]", "IPv6 is not configured on this cluster")
	_, err = services.Create(ctx, familyService("require", corev1.IPFamilyPolicyRequireDualStack, nil), metav1.CreateOptions{})
	invalidAt(t, err, "spec.ipFamilyPolicy", "this cluster is not configured for dual-stack services")

	prefer, err := services.Create(ctx, familyService("prefer", corev1.IPFamilyPolicyPreferDualStack, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkFamilies(t, prefer, corev1.IPFamilyPolicyPreferDualStack, ipv4Only)
	// Headless services without a selector name both families anyway.
	headless := familyService("headless", "", nil, corev1.ClusterIPNone)
	headless.Spec.Selector = nil
	if headless, err = services.Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(headless.Spec.IPFamilies, ipv4ipv6) || *headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack {
		t.Errorf("headless: %v %v", *headless.Spec.IPFamilyPolicy, headless.Spec.IPFamilies)
	}
	// An update asking for dual stack is refused, and the service keeps its IP.
	prefer.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	_, err = services.Update(ctx, prefer, metav1.UpdateOptions{})
	invalidAt(t, err, "spec.ipFamilyPolicy", "this cluster is not configured for dual-stack services")
	if _, err := services.Create(ctx, familyService("same", "", nil, prefer.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("the refused update gave back the IP: %v", err)
	}
}

// TestFailedServiceUpdateGivesBackIPs checks that an upgrade refused after
// its IP was reserved (here by a ValidatingAdmissionPolicy, which runs
// later) does not keep the IP.
func TestFailedServiceUpdateGivesBackIPs(t *testing.T) {
	ctx := testContext(t)
	_, client := newClientWith(t, "refused", envtest.Options{ServiceCIDRs: []string{serviceV4.String(), serviceV6.String()}})
	services := client.CoreV1().Services("refused")
	denyLabelled(t, client)
	probe, err := services.Create(ctx, familyService("probe", "", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the policy to refuse labelled updates", func() (bool, error) {
		probe.Labels = map[string]string{"deny": "yes"}
		updated, err := services.Update(ctx, probe, metav1.UpdateOptions{})
		if err != nil {
			return true, nil
		}
		updated.Labels = nil
		probe, err = services.Update(ctx, updated, metav1.UpdateOptions{})
		return false, err
	})

	web, err := services.Create(ctx, familyService("web", "", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Labels = map[string]string{"deny": "yes"}
	web.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	web.Spec.ClusterIPs = append(web.Spec.ClusterIPs, "fd00:43::77")
	if _, err := services.Update(ctx, web, metav1.UpdateOptions{}); err == nil {
		t.Fatal("the policy let the upgrade through")
	}
	if _, err := services.Create(ctx, familyService("other", "", ipv6Only, "fd00:43::77"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the refused upgrade kept its IP: %v", err)
	}
}

// denyLabelled makes a policy refuse updates of services labelled deny.
func denyLabelled(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := testContext(t)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-labelled"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.metadata.labels) || !('deny' in object.metadata.labels)"}},
		}}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "deny-labelled"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "deny-labelled",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
