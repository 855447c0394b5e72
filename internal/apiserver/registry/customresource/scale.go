package customresource

import (
	"fmt"
	"math"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// jsonFields splits a scale path (".spec.replicas") into its fields.
func jsonFields(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// scaleAccessor reads and writes the replica paths of the scale
// subresource. A missing or mistyped value reads as 0 (or ""), as upstream
// builds its Scale; validation reports the mistyped ones.
func scaleAccessor(scale *apiextensionsv1.CustomResourceSubresourceScale) *registry.ScaleAccessor {
	return &registry.ScaleAccessor{
		SpecReplicas: func(obj runtime.Object) int32 {
			return readReplicas(obj, scale.SpecReplicasPath)
		},
		SetSpecReplicas: func(obj runtime.Object, replicas int32) {
			if c := content(obj); c != nil {
				// Fails only when a parent is not an object, which the
				// schema validation that follows reports.
				_ = unstructured.SetNestedField(c, int64(replicas), jsonFields(scale.SpecReplicasPath)...)
			}
		},
		StatusReplicas: func(obj runtime.Object) int32 {
			return readReplicas(obj, scale.StatusReplicasPath)
		},
		Selector: func(obj runtime.Object) string {
			c := content(obj)
			if scale.LabelSelectorPath == nil || c == nil {
				return ""
			}
			selector, _, _ := unstructured.NestedString(c, jsonFields(*scale.LabelSelectorPath)...)
			return selector
		},
	}
}

func readReplicas(obj runtime.Object, path string) int32 {
	c := content(obj)
	if c == nil {
		return 0
	}
	replicas, _, err := unstructured.NestedInt64(c, jsonFields(path)...)
	if err != nil || replicas < 0 || replicas > math.MaxInt32 {
		return 0
	}
	return int32(replicas)
}

// validateScale checks that the scale paths hold what a Scale can carry:
// replica counts that are non-negative int32s and a string selector. The
// spec path is checked unless only status may change.
func (s *strategy) validateScale(u *unstructured.Unstructured, spec bool) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	var errs field.ErrorList
	if spec {
		errs = append(errs, validateReplicas(u, s.scale.SpecReplicasPath)...)
	}
	errs = append(errs, validateReplicas(u, s.scale.StatusReplicasPath)...)
	if s.scale.LabelSelectorPath != nil {
		path := *s.scale.LabelSelectorPath
		if selector, _, err := unstructured.NestedString(u.Object, jsonFields(path)...); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(path), selector, err.Error()))
		}
	}
	return errs
}

func validateReplicas(u *unstructured.Unstructured, path string) field.ErrorList {
	replicas, _, err := unstructured.NestedInt64(u.Object, jsonFields(path)...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}
