package pods

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
)

// updatableFields is the list upstream gives when a pod update touches a
// field it may not change.
const updatableFields = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
	"`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` " +
	"(allow it to be set to 1 if it was previously negative)"

func validate(pod *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := podspec.ValidatePodSpec(&pod.Spec, specPath)
	for i, c := range pod.Spec.Containers {
		errs = append(errs, validateImageWhitespace(c.Image, specPath.Child("containers").Index(i).Child("image"))...)
	}
	for i, c := range pod.Spec.InitContainers {
		errs = append(errs, validateImageWhitespace(c.Image, specPath.Child("initContainers").Index(i).Child("image"))...)
	}
	return errs
}

func validateImageWhitespace(image string, path *field.Path) field.ErrorList {
	if image != strings.TrimSpace(image) {
		return field.ErrorList{field.Invalid(path, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// validateUpdate allows only the changes upstream allows on an existing
// pod: images, a shorter active deadline, added tolerations, removed
// scheduling gates and a grace period fixed from negative to 1.
func validateUpdate(pod, old *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if len(pod.Spec.Containers) != len(old.Spec.Containers) {
		return field.ErrorList{field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers")}
	}
	if len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return field.ErrorList{field.Forbidden(specPath.Child("initContainers"), "pod updates may not add or remove containers")}
	}
	errs = append(errs, validateActiveDeadline(pod.Spec.ActiveDeadlineSeconds, old.Spec.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))...)
	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyRemovedGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)
	if len(errs) > 0 {
		return errs
	}

	// Start from the old spec, take over what may change, and compare.
	merged := old.Spec.DeepCopy()
	for i := range merged.Containers {
		merged.Containers[i].Image = pod.Spec.Containers[i].Image
	}
	for i := range merged.InitContainers {
		merged.InitContainers[i].Image = pod.Spec.InitContainers[i].Image
	}
	merged.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	merged.Tolerations = pod.Spec.Tolerations
	merged.SchedulingGates = pod.Spec.SchedulingGates
	if len(old.Spec.SchedulingGates) > 0 {
		// While a pod is gated its scheduling constraints may still be set.
		merged.NodeSelector = pod.Spec.NodeSelector
		merged.Affinity = pod.Spec.Affinity
	}
	if g, og := pod.Spec.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; g != nil && og != nil && *og < 0 && *g == 1 {
		merged.TerminationGracePeriodSeconds = g
	}
	if !apiequality.Semantic.DeepEqual(*merged, pod.Spec) {
		msg := "pod updates may not change fields other than " + updatableFields
		if changed := changedFields(merged, &pod.Spec); len(changed) > 0 {
			msg += "\nchanged: " + strings.Join(changed, ", ")
		}
		errs = append(errs, field.Forbidden(specPath, msg))
	}
	return errs
}

// changedFields names the top-level spec fields that differ.
func changedFields(a, b *corev1.PodSpec) []string {
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := 0; i < va.NumField(); i++ {
		if !apiequality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name := strings.Split(va.Type().Field(i).Tag.Get("json"), ",")[0]
			out = append(out, "spec."+name)
		}
	}
	return out
}

func validateActiveDeadline(v, old *int64, path *field.Path) field.ErrorList {
	switch {
	case v == nil && old != nil:
		return field.ErrorList{field.Invalid(path, v, "must not update from a positive integer to nil value")}
	case v == nil:
		return nil
	case *v < 0 || *v > math.MaxInt32:
		return field.ErrorList{field.Invalid(path, *v, validation.InclusiveRangeError(0, math.MaxInt32))}
	case old != nil && *old < *v:
		return field.ErrorList{field.Invalid(path, *v, "must be less than or equal to previous value")}
	}
	return nil
}

// validateOnlyAddedTolerations checks that every old toleration is still
// there; only its tolerationSeconds may change.
func validateOnlyAddedTolerations(tols, old []corev1.Toleration, path *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tols {
			o.TolerationSeconds = t.TolerationSeconds
			if apiequality.Semantic.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateOnlyRemovedGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	had := map[string]bool{}
	for _, g := range old {
		had[g.Name] = true
	}
	for _, g := range gates {
		if !had[g.Name] {
			return field.ErrorList{field.Forbidden(path, fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name))}
		}
	}
	return nil
}
