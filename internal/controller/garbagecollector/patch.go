package garbagecollector

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// metadataPatch is a JSON merge patch of ownerReferences guarded by
// resourceVersion.
type metadataPatch struct {
	Metadata patchMeta `json:"metadata"`
}

type patchMeta struct {
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// finalizersPatch is a JSON merge patch of finalizers guarded by
// resourceVersion; an empty list removes the field.
type finalizersPatch struct {
	Metadata finalizersMeta `json:"metadata"`
}

type finalizersMeta struct {
	ResourceVersion string   `json:"resourceVersion"`
	Finalizers      []string `json:"finalizers"`
}

// deleteOwnerRefsStrategicPatch removes the ownerReferences to ownerUIDs
// from the object whose uid is dependentUID (the uid is a precondition).
func deleteOwnerRefsStrategicPatch(dependentUID types.UID, ownerUIDs ...types.UID) ([]byte, error) {
	refs := make([]map[string]string, 0, len(ownerUIDs))
	for _, uid := range ownerUIDs {
		refs = append(refs, map[string]string{"$patch": "delete", "uid": string(uid)})
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": dependentUID, "ownerReferences": refs},
	})
}

// unblockOwnerRefsStrategicPatch sets blockOwnerDeletion=false on every
// blocking ownerReference of n.
func unblockOwnerRefsStrategicPatch(n *node) ([]byte, error) {
	no := false
	var refs []metav1.OwnerReference
	for _, ref := range n.getOwners() {
		if isTrue(ref.BlockOwnerDeletion) {
			ref.BlockOwnerDeletion = &no
			refs = append(refs, ref)
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": n.identity.UID, "ownerReferences": refs},
	})
}
