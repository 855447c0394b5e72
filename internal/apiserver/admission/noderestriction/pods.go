package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/apiserver/podrefs"
)

// admitPod lets a node create its own mirror pods and delete pods bound to
// it; it may not update pods.
func admitPod(node string, req Request, l Lookup) error {
	switch req.Operation {
	case Create:
		return admitMirrorPod(node, req, l)
	case Delete:
		pod, err := storedPod(req, l, req.Namespace, req.Name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != node {
			return forbidden(req, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node))
		}
		return nil
	}
	return forbidden(req, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", req.Operation, node))
}

// admitMirrorPod accepts a mirror pod bound to node, owned (as controller,
// without blocking its owner's deletion) by node's Node, naming no other
// API object: a node must not grant itself objects by creating pods.
func admitMirrorPod(node string, req Request, l Lookup) error {
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbidden(req, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, node))
	}
	if pod.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return forbidden(req, fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	case 1:
	default:
		return forbidden(req, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", node))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node {
		return forbidden(req, fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbidden(req, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", node))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbidden(req, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", node))
	}
	var stored *corev1.Node
	var err error = apierrors.NewNotFound(corev1.Resource("nodes"), node)
	if l.Node != nil {
		stored, err = l.Node(node)
	}
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbidden(req, fmt.Errorf("error looking up node %s to verify uid: %v", node, err))
	}
	if owner.UID != stored.UID {
		return forbidden(req, fmt.Errorf("node %s UID mismatch: expected %s got %s", node, owner.UID, stored.UID))
	}
	has, what, err := podrefs.APIObjectReference(pod)
	if err != nil {
		return forbidden(req, err)
	}
	if has {
		return forbidden(req, fmt.Errorf("node %q can not create pods that reference %s", node, what))
	}
	return nil
}

// admitPodStatus lets a node update the status of pods bound to it,
// without changing their labels or resource claim statuses.
func admitPodStatus(node string, req Request) error {
	if req.Operation != Update {
		return forbidden(req, fmt.Errorf("unexpected operation %q", req.Operation))
	}
	old, ok := req.OldObject.(*corev1.Pod)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.OldObject))
	}
	if old.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node))
	}
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbidden(req, fmt.Errorf("node %q cannot update labels through pod status", node))
	}
	if !claimStatusesEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return forbidden(req, fmt.Errorf("node %q cannot update resource claim statues", node))
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return forbidden(req, fmt.Errorf("node %q cannot update extended resource claim status", node))
	}
	return nil
}

func claimStatusesEqual(a, b []corev1.PodResourceClaimStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
		x, y := a[i].ResourceClaimName, b[i].ResourceClaimName
		if (x == nil) != (y == nil) || x != nil && *x != *y {
			return false
		}
	}
	return true
}

// admitEviction lets a node evict pods bound to it. The pod is the one the
// path names, else the one the Eviction names.
func admitEviction(node string, req Request, l Lookup) error {
	if req.Operation != Create {
		return forbidden(req, fmt.Errorf("unexpected operation %s", req.Operation))
	}
	var evictionName string
	switch e := req.Object.(type) {
	case *policyv1.Eviction:
		evictionName = e.Name
	case *policyv1beta1.Eviction:
		evictionName = e.Name
	default:
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	name := req.Name
	if name == "" {
		if name = evictionName; name == "" {
			return forbidden(req, fmt.Errorf("could not determine pod from request data"))
		}
	}
	pod, err := storedPod(req, l, req.Namespace, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node))
	}
	return nil
}
