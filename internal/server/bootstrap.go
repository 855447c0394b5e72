package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/controller/clusterdns"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
	"orch/internal/run"
)

// defaultNamespaces exist in every cluster.
var defaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// systemPriorityClasses exist in every cluster, with upstream's values.
var systemPriorityClasses = map[string]int32{"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}

// bootstrap keeps the objects every cluster has: the default namespaces, the
// bootstrap RBAC policy (reconciled once per start, as upstream), and
// the default/kubernetes Service with Endpoints and an EndpointSlice pointing
// at every running server (see apiserverleases.go). It reconciles every 10 seconds, through the API.
// Its hooks are done once the namespaces, the priority classes and the
// Services first exist: /readyz waits for them (see hooks).
type bootstrap struct {
	cfg  parsed
	rest *rest.Config
	log  *slog.Logger

	// namespaces, priorityClasses and services are named after upstream's
	// post-start hooks that make the same objects.
	namespaces, priorityClasses, services, rbac postStartHook
	// policyLoaded says whether the apiserver's authorizer has the bootstrap
	// policy (it follows the watch caches, a moment behind the writes);
	// policyReady is closed once it has, after the first reconcile.
	policyLoaded func() bool
	policyReady  chan struct{}
}

// newBootstrap returns the bootstrap of the server p; rest is its loopback client config.
func newBootstrap(p parsed, rest *rest.Config, log *slog.Logger) *bootstrap {
	b := &bootstrap{cfg: p, rest: rest, log: log, policyReady: make(chan struct{}), policyLoaded: func() bool { return true }}
	b.namespaces.name = "start-system-namespaces-controller"
	b.priorityClasses.name = "scheduling/bootstrap-system-priority-classes"
	b.services.name = "bootstrap-controller"
	b.rbac.name = "rbac/bootstrap-roles"
	return b
}

// hooks are the start-up tasks /readyz waits for.
func (b *bootstrap) hooks() []*postStartHook {
	return []*postStartHook{&b.namespaces, &b.priorityClasses, &b.services, &b.rbac}
}

func (b *bootstrap) Start(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(b.rest)
	if err != nil {
		return err
	}
	for {
		if err := b.reconcile(ctx, client); err != nil && ctx.Err() == nil {
			b.log.Warn("cannot ensure the default objects yet; retrying", "err", err)
		}
		wait := 10 * time.Second
		if !b.services.done.Load() { // /readyz waits for the first round
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (b *bootstrap) reconcile(ctx context.Context, client kubernetes.Interface) error {
	for _, name := range defaultNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: "orch-bootstrap"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %q: %w", name, err)
		}
	}
	b.namespaces.finish()
	if !b.rbac.done.Load() {
		// As upstream: the default roles and bindings are made or repaired
		// at every start; a user's later edits stay until the next one.
		if err := rbacpolicy.Reconcile(ctx, client); err != nil {
			return fmt.Errorf("the bootstrap RBAC policy: %w", err)
		}
		for !b.policyLoaded() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		b.rbac.finish()
		close(b.policyReady)
	}
	for name, value := range systemPriorityClasses {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."}
		if name == "system-node-critical" {
			pc.Description = "Used for system critical pods that must not be moved from their current node."
		}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{FieldManager: "orch-bootstrap"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("priority class %q: %w", name, err)
		}
	}
	b.priorityClasses.finish()
	if err := b.ensureService(ctx, client); err != nil {
		return err
	}
	if err := b.ensureDNSService(ctx, client); err != nil {
		return err
	}
	if err := b.ensureServiceCIDR(ctx, client); err != nil {
		return err
	}
	b.services.finish()
	ips, err := apiserverIPs(ctx, client, b.cfg.advertise, time.Now())
	if err != nil {
		return fmt.Errorf("apiserver leases: %w", err)
	}
	if err := b.ensureEndpoints(ctx, client, ips); err != nil {
		return err
	}
	if err := b.ensureEndpointSlice(ctx, client, ips); err != nil {
		return err
	}
	return b.ensureRoleLabels(ctx, client)
}

// ensureRoleLabels puts the control-plane role labels on this server's own
// Node once its agent has registered it (not at all with --disable-agent).
func (b *bootstrap) ensureRoleLabels(ctx context.Context, client kubernetes.Interface) error {
	if b.cfg.DisableAgent {
		return nil
	}
	node, err := client.CoreV1().Nodes().Get(ctx, b.cfg.nodeName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	missing := map[string]string{}
	for k, v := range roleLabels {
		if node.Labels[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "orch-bootstrap"})
	return err
}

func (b *bootstrap) ensureService(ctx context.Context, client kubernetes.Interface) error {
	ip, err := pki.FirstServiceIP(b.cfg.serviceCIDR)
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(),
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(b.cfg.HTTPSPort))}},
		},
	}
	services := client.CoreV1().Services(metav1.NamespaceDefault)
	if _, err := services.Get(ctx, svc.Name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	_, err = services.Create(ctx, svc, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("service default/kubernetes: %w", err)
	}
	return nil
}

// defaultServiceCIDRName is upstream's name of the ServiceCIDR of
// --service-cidr.
const defaultServiceCIDRName = "kubernetes"

// ensureServiceCIDR keeps the default ServiceCIDR, the --service-cidr
// ranges (both families on a dual-stack cluster) the Services' cluster IPs
// come from, Ready, as upstream's default ServiceCIDR controller. A
// single-stack one becomes dual-stack when --service-cidr gains a second
// family; any other difference is left for the operator.
func (b *bootstrap) ensureServiceCIDR(ctx context.Context, client kubernetes.Interface) error {
	want := make([]string, len(b.cfg.serviceCIDRs))
	for i, n := range b.cfg.serviceCIDRs {
		want[i] = n.String()
	}
	cidrs := client.NetworkingV1().ServiceCIDRs()
	sc, err := cidrs.Get(ctx, defaultServiceCIDRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sc, err = cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceCIDRName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: want}}, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
	} else if err == nil && len(sc.Spec.CIDRs) == 1 && len(want) == 2 && sc.Spec.CIDRs[0] == want[0] {
		sc.Spec.CIDRs = want
		sc, err = cidrs.Update(ctx, sc, metav1.UpdateOptions{FieldManager: "orch-bootstrap"})
	}
	if err != nil {
		return fmt.Errorf("the default ServiceCIDR: %w", err)
	}
	for _, c := range sc.Status.Conditions {
		if c.Type == networkingv1.ServiceCIDRConditionReady && c.Status == metav1.ConditionTrue {
			return nil
		}
	}
	sc.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Message: "Kubernetes default Service CIDR is ready", LastTransitionTime: metav1.Now()}}
	if _, err := cidrs.UpdateStatus(ctx, sc, metav1.UpdateOptions{FieldManager: "orch-bootstrap"}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("the default ServiceCIDR's status: %w", err)
	}
	return nil
}

// ensureDNSService creates kube-system/kube-dns at --cluster-dns, the
// Service pods' resolv.conf points at. It has no selector: every agent
// answers DNS itself, and the clusterdns controller lists each node's
// resolver in its EndpointSlice; internalTrafficPolicy Local keeps every
// query on the node it came from, so a node cut off from the others still
// resolves names. A kube-dns the user changed is left as it is.
func (b *bootstrap) ensureDNSService(ctx context.Context, client kubernetes.Interface) error {
	local := corev1.ServiceInternalTrafficPolicyLocal
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: clusterdns.ServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "KubeDNS"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: b.cfg.ClusterDNS, InternalTrafficPolicy: &local,
			Ports: clusterdns.ServicePorts(),
		},
	}
	services := client.CoreV1().Services(metav1.NamespaceSystem)
	if _, err := services.Get(ctx, svc.Name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	_, err := services.Create(ctx, svc, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("service kube-system/kube-dns: %w", err)
	}
	return nil
}

func (b *bootstrap) ensureEndpoints(ctx context.Context, client kubernetes.Interface, ips []string) error {
	var addresses []corev1.EndpointAddress
	for _, ip := range ips {
		addresses = append(addresses, corev1.EndpointAddress{IP: ip})
	}
	want := []corev1.EndpointSubset{{
		Addresses: addresses,
		Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(b.cfg.HTTPSPort), Protocol: corev1.ProtocolTCP}},
	}}
	endpoints := client.CoreV1().Endpoints(metav1.NamespaceDefault)
	current, err := endpoints.Get(ctx, "kubernetes", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}}, Subsets: want}
		_, err = endpoints.Create(ctx, ep, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(current.Subsets, want) {
		return nil
	}
	current.Subsets = want
	_, err = endpoints.Update(ctx, current, metav1.UpdateOptions{FieldManager: "orch-bootstrap"})
	return err
}

func (b *bootstrap) ensureEndpointSlice(ctx context.Context, client kubernetes.Interface, ips []string) error {
	ready := true
	port := int32(b.cfg.HTTPSPort)
	name, proto := "https", corev1.ProtocolTCP
	addressType := discoveryv1.AddressTypeIPv4
	if b.cfg.advertise.To4() == nil {
		addressType = discoveryv1.AddressTypeIPv6
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "orch-bootstrap"}},
		AddressType: addressType,
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(ips)),
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for _, ip := range ips {
		want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	current, err := slices.Get(ctx, "kubernetes", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = slices.Create(ctx, want, metav1.CreateOptions{FieldManager: "orch-bootstrap"})
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(current.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(current.Ports, want.Ports) &&
		current.AddressType == want.AddressType {
		return nil
	}
	current.Endpoints, current.Ports, current.AddressType = want.Endpoints, want.Ports, want.AddressType
	_, err = slices.Update(ctx, current, metav1.UpdateOptions{FieldManager: "orch-bootstrap"})
	return err
}

// metaName is the ObjectMeta of an orch object in kube-system.
func metaName(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}
}

// afterPolicy runs r once the bootstrap policy is in force, so that the
// components acting under it are not refused while it is being made.
func (b *bootstrap) afterPolicy(r run.Runnable) run.Runnable {
	return run.Func(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-b.policyReady:
		}
		return r.Start(ctx)
	})
}
