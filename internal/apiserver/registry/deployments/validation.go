package deployments

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

var strategyTypes = []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*appsv1.Deployment).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Replicas != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*spec.Replicas), p.Child("replicas"))...)
	}
	sel, selErrs := workloadutil.ValidateSelector(spec.Selector, "deployment", p.Child("selector"))
	errs = append(errs, selErrs...)
	tp := p.Child("template")
	errs = append(errs, workloadutil.ValidateTemplateLabels(sel, &spec.Template, tp)...)
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	errs = append(errs, workloadutil.ValidateRestartAlways(&spec.Template, "ReplicaSet", tp)...)
	errs = append(errs, validateStrategy(&spec.Strategy, p.Child("strategy"))...)
	errs = append(errs, workloadutil.NonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if d := spec.ProgressDeadlineSeconds; d != nil {
		dp := p.Child("progressDeadlineSeconds")
		errs = append(errs, workloadutil.NonNegative(int64(*d), dp)...)
		if *d <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(dp, *d, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateStrategy(s *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(s.RollingUpdate, p.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), s.Type, strategyTypes)}
	}
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	unavailable, surge := 0, 0
	if ru.MaxUnavailable != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, workloadutil.NotMoreThan100Percent(*ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		unavailable = workloadutil.IntOrPercentValue(*ru.MaxUnavailable)
	}
	if ru.MaxSurge != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*ru.MaxSurge, p.Child("maxSurge"))...)
		surge = workloadutil.IntOrPercentValue(*ru.MaxSurge)
	}
	if unavailable == 0 && surge == 0 {
		errs = append(errs, field.Invalid(p.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	return errs
}

// validateUpdate forbids changing the selector, as apps/v1 does.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	d, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	return apivalidation.ValidateImmutableField(d.Spec.Selector, oldD.Spec.Selector, field.NewPath("spec", "selector"))
}
