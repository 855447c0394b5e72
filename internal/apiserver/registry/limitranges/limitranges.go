// Package limitranges is the registry entry for core/v1 limitranges.
//
// Upstream prints no columns of its own for limit ranges, so the default
// table (name and creation time) applies.
package limitranges

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

var supportedTypes = []string{string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim), string(corev1.LimitTypePod)}

// Resource returns the limitranges entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "limitranges",
		Kind:         "LimitRange",
		SingularName: "limitrange",
		Namespaced:   true,
		ShortNames:   []string{"limits"},
		New:          func() runtime.Object { return &corev1.LimitRange{} },
		NewList:      func() runtime.Object { return &corev1.LimitRangeList{} },
		Default:      func(obj runtime.Object) { Default(obj.(*corev1.LimitRange)) },
		Validate:     func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.LimitRange)) },
	}
}

// Default fills a Container limit's default limit from max and its default
// request from the default limit or min, as upstream does, and rounds every
// quantity.
func Default(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type == corev1.LimitTypeContainer {
			if item.Default == nil {
				item.Default = corev1.ResourceList{}
			}
			if item.DefaultRequest == nil {
				item.DefaultRequest = corev1.ResourceList{}
			}
			fillMissing(item.Default, item.Max)
			fillMissing(item.DefaultRequest, item.Default)
			fillMissing(item.DefaultRequest, item.Min)
		}
		for _, list := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			podspec.RoundResourceList(list)
		}
	}
}

func fillMissing(dst, src corev1.ResourceList) {
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
		}
	}
}

func validate(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	seenTypes := sets.New[corev1.LimitType]()
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		switch {
		case item.Type == "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		case !slices.Contains(supportedTypes, string(item.Type)):
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, supportedTypes))
		case seenTypes.Has(item.Type):
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seenTypes.Insert(item.Type)
		errs = append(errs, validateItem(item, p)...)
	}
	return errs
}

func validateItem(item corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	lists := []struct {
		name  string
		items corev1.ResourceList
	}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}}
	keys := sets.New[corev1.ResourceName]()
	for _, l := range lists {
		for name, q := range l.items {
			kp := p.Child(l.name).Key(string(name))
			errs = append(errs, podspec.ValidateResourceName(name, kp)...)
			errs = append(errs, podspec.ValidateResourceQuantity(name, q, kp)...)
			keys.Insert(name)
		}
	}
	if item.Type == corev1.LimitTypePod {
		if len(item.Default) > 0 {
			errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
		}
		if len(item.DefaultRequest) > 0 {
			errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
		}
	}
	if item.Type == corev1.LimitTypePersistentVolumeClaim {
		_, hasMin := item.Min[corev1.ResourceStorage]
		_, hasMax := item.Max[corev1.ResourceStorage]
		if !hasMin && !hasMax {
			errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
		}
	}

	one := resource.MustParse("1")
	for _, name := range sets.List(keys) {
		k := string(name)
		minQ, hasMin := item.Min[name]
		maxQ, hasMax := item.Max[name]
		defQ, hasDef := item.Default[name]
		reqQ, hasReq := item.DefaultRequest[name]
		ratio, hasRatio := item.MaxLimitRequestRatio[name]
		if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("min").Key(k), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), reqQ.String(), fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
		}
		if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), reqQ.String(), fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
		}
		if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), reqQ.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
		}
		if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(k), minQ.String(), fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
		}
		if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(k), maxQ.String(), fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
		}
		if hasRatio && ratio.Cmp(one) < 0 {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		if hasRatio && hasMin && hasMax && minQ.MilliValue() > 0 {
			maxRatio := float64(maxQ.MilliValue()) / float64(minQ.MilliValue())
			if float64(ratio.MilliValue())/1000 > maxRatio {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), maxRatio)))
			}
		}
	}
	return errs
}
