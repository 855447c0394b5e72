package horizontalpodautoscalers

import (
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// ResourceV1 returns the autoscaling/v1 horizontalpodautoscalers entry: the
// same stored objects as Resource, seen through ToV2 and FromV2. Its
// strategy is autoscaling/v2's run on the converted object, as upstream runs
// one strategy on its internal version, so validation errors name v2 fields
// (spec.metrics[0]... for targetCPUUtilizationPercentage).
func ResourceV1() registry.Resource {
	v2 := Resource()
	return registry.Resource{
		GroupVersion: autoscalingv1.SchemeGroupVersion,
		Resource:     v2.Resource,
		Kind:         v2.Kind,
		SingularName: v2.SingularName,
		Namespaced:   true,
		ShortNames:   []string{"hpa"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
		NewList:      func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		HasStatus:    true,
		Default:      func(obj runtime.Object) { throughV2(obj, v2.Default) },
		PrepareForCreate: func(obj runtime.Object) {
			throughV2(obj, v2.PrepareForCreate)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			h, err := ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
			if err != nil {
				return field.ErrorList{field.InternalError(field.NewPath("metadata", "annotations"), err)}
			}
			return v2.Validate(h)
		},
		StoredAs: &registry.StoredVersion{
			GroupVersion: autoscalingv2.SchemeGroupVersion, Kind: v2.Kind, Resource: v2.Resource,
			New: v2.New,
			ToStored: func(obj runtime.Object) (runtime.Object, error) {
				return ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
			},
			FromStored: func(obj runtime.Object) (runtime.Object, error) {
				return FromV2(obj.(*autoscalingv2.HorizontalPodAutoscaler))
			},
		},
		Columns: v2.Columns,
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
			h, err := ToV2(hpa)
			if err != nil {
				h = &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: hpa.ObjectMeta}
			}
			return v2.Row(h, now)
		},
	}
}

// throughV2 converts the autoscaling/v1 obj to autoscaling/v2, applies change
// to it and converts the result back into obj. obj is left as it was if a
// conversion fails.
func throughV2(obj runtime.Object, change func(runtime.Object)) {
	hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	h, err := ToV2(hpa)
	if err != nil {
		return
	}
	change(h)
	back, err := FromV2(h)
	if err != nil {
		return
	}
	*hpa = *back
}
