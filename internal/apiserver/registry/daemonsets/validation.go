package daemonsets

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

var strategyTypes = []string{string(appsv1.OnDeleteDaemonSetStrategyType), string(appsv1.RollingUpdateDaemonSetStrategyType)}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*appsv1.DaemonSet).Spec
	p := field.NewPath("spec")
	sel, errs := workloadutil.ValidateSelector(spec.Selector, "daemonset", p.Child("selector"))
	tp := p.Child("template")
	errs = append(errs, workloadutil.ValidateTemplateLabels(sel, &spec.Template, tp)...)
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	errs = append(errs, workloadutil.ValidateRestartAlways(&spec.Template, "DaemonSet", tp)...)
	errs = append(errs, workloadutil.NonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, validateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	return errs
}

func validateStrategy(s *appsv1.DaemonSetUpdateStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdate(s.RollingUpdate, p.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), s.Type, strategyTypes)}
	}
}

// validateRollingUpdate requires exactly one of maxUnavailable and maxSurge
// to be non-zero.
func validateRollingUpdate(ru *appsv1.RollingUpdateDaemonSet, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	unavailable, surge := 0, 0
	if ru.MaxUnavailable != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, workloadutil.NotMoreThan100Percent(*ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		unavailable = workloadutil.IntOrPercentValue(*ru.MaxUnavailable)
	}
	if ru.MaxSurge != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*ru.MaxSurge, p.Child("maxSurge"))...)
		errs = append(errs, workloadutil.NotMoreThan100Percent(*ru.MaxSurge, p.Child("maxSurge"))...)
		surge = workloadutil.IntOrPercentValue(*ru.MaxSurge)
	}
	switch {
	case unavailable != 0 && surge != 0:
		errs = append(errs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case unavailable == 0 && surge == 0:
		errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// validateUpdate forbids changing the selector, as apps/v1 does.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	ds, oldDS := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	return apivalidation.ValidateImmutableField(ds.Spec.Selector, oldDS.Spec.Selector, field.NewPath("spec", "selector"))
}
