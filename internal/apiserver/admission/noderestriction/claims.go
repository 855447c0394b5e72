package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
)

// admitClaimStatus lets a node update only the status fields of a claim
// the kubelet reports when it expands a volume: capacity, conditions,
// allocatedResources and allocatedResourceStatuses
// (RecoverVolumeExpansionFailure, on since 1.34).
func admitClaimStatus(node string, req Request) error {
	if req.Operation != Update {
		return forbidden(req, fmt.Errorf("unexpected operation %q", req.Operation))
	}
	old, ok := req.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.OldObject))
	}
	claim, ok := req.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	old, claim = comparable(old), comparable(claim)
	if !apiequality.Semantic.DeepEqual(old, claim) {
		return forbidden(req, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions: %v", node, diff.Diff(old, claim)))
	}
	return nil
}

// comparable is a copy of c without what a node may change, and without
// what an update need not carry (resourceVersion, managedFields).
func comparable(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	c = c.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	c.Status.Capacity = nil
	c.Status.Conditions = nil
	c.Status.AllocatedResources = nil
	c.Status.AllocatedResourceStatuses = nil
	return c
}
