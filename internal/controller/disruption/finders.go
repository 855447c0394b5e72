package disruption

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// finders look up the scale of a pod's controller in the informer caches,
// the way upstream's finders do: a ReplicaSet owned by a Deployment counts
// as its Deployment; a cached object whose UID differs from the reference
// is not the pod's controller.
type finders struct {
	rcs          corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
}

// find tries each workload kind in turn.
func (f finders) find(ref *metav1.OwnerReference, namespace string) (*scale, error) {
	switch {
	case isKind(ref, "ReplicationController", ""):
		return f.replicationController(ref, namespace), nil
	case isKind(ref, "ReplicaSet", "apps", "extensions"):
		return f.replicaSet(ref, namespace), nil
	case isKind(ref, "StatefulSet", "apps"):
		return f.statefulSet(ref, namespace), nil
	}
	return nil, nil
}

func (f finders) replicationController(ref *metav1.OwnerReference, namespace string) *scale {
	rc, err := f.rcs.ReplicationControllers(namespace).Get(ref.Name)
	if err != nil || rc.UID != ref.UID {
		return nil
	}
	return &scale{uid: rc.UID, replicas: replicasOr1(rc.Spec.Replicas)}
}

// replicaSet is the ReplicaSet's scale, or its Deployment's when a
// Deployment controls it.
func (f finders) replicaSet(ref *metav1.OwnerReference, namespace string) *scale {
	rs, err := f.replicaSets.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	owner := metav1.GetControllerOf(rs)
	if owner == nil || owner.Kind != "Deployment" {
		return &scale{uid: rs.UID, replicas: replicasOr1(rs.Spec.Replicas)}
	}
	if !isKind(owner, "Deployment", "apps", "extensions") {
		return nil
	}
	d, err := f.deployments.Deployments(namespace).Get(owner.Name)
	if err != nil || d.UID != owner.UID {
		return nil
	}
	return &scale{uid: d.UID, replicas: replicasOr1(d.Spec.Replicas)}
}

func (f finders) statefulSet(ref *metav1.OwnerReference, namespace string) *scale {
	ss, err := f.statefulSets.StatefulSets(namespace).Get(ref.Name)
	if err != nil || ss.UID != ref.UID {
		return nil
	}
	return &scale{uid: ss.UID, replicas: replicasOr1(ss.Spec.Replicas)}
}

// isKind is true when ref is of kind in one of groups.
func isKind(ref *metav1.OwnerReference, kind string, groups ...string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.Kind != kind {
		return false
	}
	for _, g := range groups {
		if gv.Group == g {
			return true
		}
	}
	return false
}

// replicasOr1 reads spec.replicas, which the apiserver defaults to 1.
func replicasOr1(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
