package customresource

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// prepareForCreate drops the status when the status subresource is on
// (only /status writes it) and starts metadata.generation at 1.
func (s *strategy) prepareForCreate(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if s.status {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
}

// prepareForUpdate keeps the stored status when the status subresource is
// on, and moves metadata.generation on when anything but metadata changed
// (status included when there is no status subresource). Generation
// starts from the stored object's.
func (s *strategy) prepareForUpdate(obj, old runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	oldU, oldOK := old.(*unstructured.Unstructured)
	if !ok || !oldOK {
		return
	}
	if s.status {
		if status, found := oldU.Object["status"]; found {
			u.Object["status"] = runtime.DeepCopyJSONValue(status)
		} else {
			delete(u.Object, "status")
		}
	}
	if !apiequality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(oldU.Object)) {
		u.SetGeneration(oldU.GetGeneration() + 1)
	}
}

// withoutMetadata is a shallow copy of obj without its metadata.
func withoutMetadata(obj map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// PrepareForStatusUpdate is what a write through /status of a custom
// resource keeps: the stored object with the new status (or none, when the
// new object has none), and the new object's managedFields, which field
// tracking of the status write has set. It replaces, for custom
// resources, both the generic copy of all-but-status and the resource's
// PrepareForUpdate (which keeps the stored status). obj is changed in place.
func PrepareForStatusUpdate(obj, old runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	oldU, oldOK := old.(*unstructured.Unstructured)
	if !ok || !oldOK {
		return
	}
	status, hasStatus := u.Object["status"]
	managedFields := u.GetManagedFields()
	u.Object = oldU.DeepCopy().Object
	u.SetManagedFields(managedFields)
	if hasStatus {
		u.Object["status"] = status
	} else {
		delete(u.Object, "status")
	}
}
