package pods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// ephemeralContainers is the pods/ephemeralcontainers subresource, as
// upstream's EphemeralContainersStrategy: a write there changes
// spec.ephemeralContainers and nothing else.
var ephemeralContainers = registry.SpecSubresource{
	PrepareForUpdate: func(obj, old runtime.Object) {
		keepOnlyEphemeralContainers(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateEphemeralContainersUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
}

// keepOnlyEphemeralContainers drops every spec change but those to
// spec.ephemeralContainers (the caller keeps the metadata and status).
func keepOnlyEphemeralContainers(pod, old *corev1.Pod) {
	ephemeral := pod.Spec.EphemeralContainers
	pod.Spec = *old.Spec.DeepCopy()
	pod.Spec.EphemeralContainers = ephemeral
}

// validateCreate refuses what a pod may not have when it is created:
// ephemeral containers come only through pods/ephemeralcontainers.
func validateCreate(pod *corev1.Pod) field.ErrorList {
	if len(pod.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

// validateEphemeralContainersUpdate is upstream's
// ValidatePodEphemeralContainersUpdate less the metadata and spec checks
// every update gets: ephemeral containers may be added, never changed or
// removed, and static pods take none.
func validateEphemeralContainersUpdate(pod, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	path := field.NewPath("spec", "ephemeralContainers")
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	var errs field.ErrorList
	for _, o := range old.Spec.EphemeralContainers {
		switch c, ok := byName[o.Name]; {
		case !ok:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !apiequality.Semantic.DeepEqual(o, *c):
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%s", o.Name, diff.Diff(o, *c))))
		}
	}
	return errs
}
