package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/admission/noderestriction"
	"orch/internal/apiserver/registry/services"
	"orch/internal/volumeprotection"
)

// admitCreate runs the built-in mutating admission plugins that are on, in
// upstream's order, on a new object (NamespaceLifecycle, NodeRestriction,
// and for pods LimitRanger's defaults, ServiceAccount, AlwaysPullImages,
// Priority, DefaultTolerationSeconds, PodTolerationRestriction and
// RuntimeClass; DefaultStorageClass,
// StorageObjectInUseProtection and DefaultIngressClass), with what is not admission but must happen
// first: RBAC's escalation check and a Service's allocations.
func (s *Server) admitCreate(ctx context.Context, rs *resourceStore, obj runtime.Object, dryRun bool) error {
	if s.plugins.on(pluginNamespaceLifecycle) {
		if err := s.checkNamespace(ctx, rs, obj); err != nil {
			return err
		}
	}
	if err := s.checkRBACEscalation(ctx, obj); err != nil {
		return err
	}
	meta := mustAccessor(obj)
	if err := s.admitNode(ctx, noderestriction.Create, rs, "", meta.GetNamespace(), meta.GetName(), obj, nil); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *corev1.Service:
		return s.allocateService(ctx, rs, o, nil, dryRun)
	case *corev1.PersistentVolumeClaim:
		if s.plugins.on(pluginDefaultStorageClass) {
			if err := s.defaultStorageClass(ctx, o); err != nil {
				return err
			}
		}
		if s.plugins.on(pluginStorageObjectInUseProtection) {
			// The pvc-protection controller takes it off once no pod uses it.
			volumeprotection.SetFinalizer(o, volumeprotection.ClaimFinalizer, true)
		}
	case *corev1.PersistentVolume:
		if s.plugins.on(pluginStorageObjectInUseProtection) {
			volumeprotection.SetFinalizer(o, volumeprotection.VolumeFinalizer, true)
		}
	case *networkingv1.Ingress:
		if s.plugins.on(pluginDefaultIngressClass) {
			return s.defaultIngressClass(ctx, o)
		}
	case *certificatesv1.CertificateSigningRequest:
		return s.admitCSRSubject(o)
	case *corev1.Pod:
		return s.admitNewPod(ctx, o)
	}
	return nil
}

// admitNewPod runs the pod plugins of admitCreate.
func (s *Server) admitNewPod(ctx context.Context, pod *corev1.Pod) error {
	if err := s.defaultPodLimits(ctx, pod); err != nil {
		return err
	}
	if s.plugins.on(pluginServiceAccount) {
		if err := s.admitServiceAccount(ctx, pod); err != nil {
			return err
		}
	}
	if s.plugins.on(pluginAlwaysPullImages) {
		alwaysPullImages(pod)
	}
	if s.plugins.on(pluginPriority) {
		if err := s.admitPriority(ctx, pod); err != nil {
			return err
		}
	}
	if s.plugins.on(pluginDefaultTolerationSeconds) {
		addDefaultTolerations(pod)
	}
	if s.plugins.on(pluginPodTolerationRestriction) {
		if err := s.admitPodTolerations(ctx, pod, true); err != nil {
			return err
		}
	}
	if s.plugins.on(pluginRuntimeClass) {
		return s.admitRuntimeClass(ctx, pod)
	}
	return nil
}

// admitPriority is upstream's Priority admission: spec.priority (and
// preemptionPolicy) come from the pod's PriorityClass, or from the global
// default class when it names none; an unknown class is refused.
func (s *Server) admitPriority(ctx context.Context, pod *corev1.Pod) error {
	classes := s.resources[schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")]
	if classes == nil {
		return nil
	}
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		obj, err := classes.get(ctx, "", name)
		if isNotFound(err) {
			return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		if err != nil {
			return err
		}
		class = obj.(*schedulingv1.PriorityClass)
	} else {
		all, _, err := classes.cache.List(ctx, 0, classes.prefix)
		if err != nil {
			return err
		}
		for _, o := range all {
			if pc := o.Value.(*schedulingv1.PriorityClass); pc.GlobalDefault {
				class = pc
				break
			}
		}
	}
	priority, policy := int32(0), corev1.PreemptLowerPriority
	if class != nil {
		priority = class.Value
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
		pod.Spec.PriorityClassName = class.Name
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name,
			fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if pod.Spec.PreemptionPolicy == nil {
		pod.Spec.PreemptionPolicy = &policy
	}
	return nil
}

// defaultTolerationSeconds is how long pods stay on a node that is not ready
// or unreachable (upstream's DefaultTolerationSeconds admission).
const defaultTolerationSeconds = int64(300)

// addDefaultTolerations gives a pod that has none for them the NoExecute
// tolerations of the not-ready and unreachable taints, for 300 s.
func addDefaultTolerations(pod *corev1.Pod) {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
				tolerated = true
			}
		}
		if !tolerated {
			seconds := defaultTolerationSeconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
}

// admitUpdate runs NodeRestriction, checks that an RBAC object's writer
// does not escalate its rights (unless the update only touches what the garbage collector
// writes), allocates what an updated service newly needs, and runs
// PodTolerationRestriction on an updated pod.
func (s *Server) admitUpdate(ctx context.Context, rs *resourceStore, subresource string, obj, old runtime.Object, dryRun bool) error {
	meta := mustAccessor(obj)
	if err := s.admitNode(ctx, noderestriction.Update, rs, subresource, meta.GetNamespace(), meta.GetName(), obj, old); err != nil {
		return err
	}
	if rs.gvk.Group == rbacv1.GroupName && !onlyGCFieldsChanged(obj, old) {
		if err := s.checkRBACEscalation(ctx, obj); err != nil {
			return err
		}
	}
	switch o := obj.(type) {
	case *corev1.Service:
		return s.allocateService(ctx, rs, o, old.(*corev1.Service), dryRun)
	case *corev1.Pod:
		if subresource == "" && s.plugins.on(pluginPodTolerationRestriction) {
			return s.admitPodTolerations(ctx, o, false)
		}
	case *corev1.PersistentVolumeClaim:
		if subresource == "" && s.plugins.on(pluginPersistentVolumeClaimResize) {
			return s.admitClaimResize(ctx, o, old.(*corev1.PersistentVolumeClaim))
		}
	case *certificatesv1.CertificateSigningRequest:
		return s.admitCSRUpdate(ctx, subresource, o, old.(*certificatesv1.CertificateSigningRequest))
	}
	return nil
}

// allocateService reserves the cluster IPs and node ports svc needs and old
// (nil on create) did not have; a dry run reserves nothing. On a create it
// first settles the IP families (an update does so before validation:
// initServiceFamilies). What an update no longer holds is given back once
// it is stored (settleServiceUpdate).
func (s *Server) allocateService(ctx context.Context, rs *resourceStore, svc, old *corev1.Service, dryRun bool) error {
	owner := svc.Namespace + "/" + svc.Name
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
	}
	if old == nil {
		if err := s.initServiceFamilies(rs, svc, nil); err != nil {
			return err
		}
	}
	if !needsNodePorts(svc) && svc.Spec.Type == corev1.ServiceTypeClusterIP {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if dryRun {
		return nil
	}
	reserved, err := s.alloc.clusterIPs(ctx, svc, old, owner)
	if err != nil {
		return asInvalid(rs, svc.Name, err)
	}
	fail := func(err error) error {
		s.alloc.releaseAll(ctx, reserved)
		return asInvalid(rs, svc.Name, err)
	}
	if err := s.allocateHealthCheckNodePort(ctx, svc, old, owner); err != nil {
		return fail(err)
	}
	if svc.Spec.HealthCheckNodePort != 0 && (old == nil || old.Spec.HealthCheckNodePort != svc.Spec.HealthCheckNodePort) {
		reserved = append(reserved, nodePortPrefix+strconv.Itoa(int(svc.Spec.HealthCheckNodePort)))
	}
	if !hasNodePorts(svc) {
		return nil
	}
	held := map[int32]bool{}
	if old != nil && hasNodePorts(old) {
		for _, p := range old.Spec.Ports {
			held[p.NodePort] = true
		}
	}
	for i := range svc.Spec.Ports {
		port := &svc.Spec.Ports[i]
		if port.NodePort == 0 && !needsNodePorts(svc) {
			continue // allocateLoadBalancerNodePorts false: only those asked for
		}
		if port.NodePort != 0 && held[port.NodePort] {
			continue
		}
		np, err := s.alloc.nodePort(ctx, port.NodePort, owner, field.NewPath("spec", "ports").Index(i).Child("nodePort"))
		if err != nil {
			return fail(err)
		}
		reserved = append(reserved, nodePortPrefix+strconv.Itoa(int(np)))
		port.NodePort = np
	}
	return nil
}

// initServiceFamilies applies upstream's IP family rules (defaults, what
// the cluster's service CIDRs allow, upgrade and downgrade) to a service
// being written; old is nil on a create.
func (s *Server) initServiceFamilies(rs *resourceStore, svc, old *corev1.Service) error {
	if errs := services.InitIPFamilies(svc, old, s.alloc.families); len(errs) > 0 {
		return apierrors.NewInvalid(rs.gvk.GroupKind(), svc.Name, errs)
	}
	return nil
}

// settleServiceUpdate gives back, once an update of a service is over,
// what one side holds and the other does not: on success what the stored
// service no longer uses (its second IP after a downgrade, its IPs when it
// became an ExternalName service, node ports it dropped), on failure what
// allocateService reserved for it.
func (s *Server) settleServiceUpdate(ctx context.Context, obj, old runtime.Object, failed bool) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	now, before := serviceKeys(svc), serviceKeys(old.(*corev1.Service))
	if failed {
		s.alloc.releaseAll(ctx, keysNotIn(now, before))
		return
	}
	s.alloc.releaseAll(ctx, keysNotIn(before, now))
}

// allocateHealthCheckNodePort gives a LoadBalancer Service with
// externalTrafficPolicy Local its spec.healthCheckNodePort from the node
// port range, as upstream (the one asked for, or a free one). The one an
// update no longer needs is given back once it is stored.
func (s *Server) allocateHealthCheckNodePort(ctx context.Context, svc, old *corev1.Service, owner string) error {
	had := int32(0)
	if old != nil {
		had = old.Spec.HealthCheckNodePort
	}
	if !needsHealthCheckNodePort(svc) {
		return nil // settleServiceUpdate gives back the one it had
	}
	if had != 0 && (svc.Spec.HealthCheckNodePort == 0 || svc.Spec.HealthCheckNodePort == had) {
		svc.Spec.HealthCheckNodePort = had
		return nil
	}
	port, err := s.alloc.nodePort(ctx, svc.Spec.HealthCheckNodePort, owner, field.NewPath("spec", "healthCheckNodePort"))
	if err != nil {
		return err
	}
	svc.Spec.HealthCheckNodePort = port
	return nil
}

// needsHealthCheckNodePort: a LoadBalancer with externalTrafficPolicy Local.
func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// releaseOnFailure gives back what admitCreate reserved for an object that
// was then not stored.
func (s *Server) releaseOnFailure(ctx context.Context, rs *resourceStore, obj runtime.Object, dryRun bool) {
	if !dryRun {
		s.releaseResources(ctx, rs, obj)
	}
}

// releaseResources gives back a deleted service's IPs and node ports.
func (s *Server) releaseResources(ctx context.Context, rs *resourceStore, obj runtime.Object) {
	if svc, ok := obj.(*corev1.Service); ok {
		s.alloc.releaseAll(ctx, serviceKeys(svc))
	}
}

func asInvalid(rs *resourceStore, name string, err error) error {
	var fe *field.Error
	if errors.As(err, &fe) {
		return apierrors.NewInvalid(rs.gvk.GroupKind(), name, field.ErrorList{fe})
	}
	return err
}

// onlyGCFieldsChanged is true when obj differs from old in nothing but
// owner references, finalizers and the fields the server keeps, as
// upstream's RBAC storage lets such updates skip the escalation check.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	a, b := obj.DeepCopyObject(), old.DeepCopyObject()
	for _, o := range []runtime.Object{a, b} {
		m := mustAccessor(o)
		m.SetOwnerReferences(nil)
		m.SetFinalizers(nil)
		m.SetResourceVersion("")
		m.SetManagedFields(nil)
		m.SetGeneration(0)
	}
	return apiequality.Semantic.DeepEqual(a, b)
}
