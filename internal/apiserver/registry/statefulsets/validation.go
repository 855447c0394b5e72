package statefulsets

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

var retentionPolicies = []string{string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*appsv1.StatefulSet).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList

	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	errs = append(errs, validateUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	if rp := spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpp := p.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetention(rp.WhenDeleted, rpp.Child("whenDeleted"))...)
		errs = append(errs, validateRetention(rp.WhenScaled, rpp.Child("whenScaled"))...)
	}
	if spec.Replicas != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*spec.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, workloadutil.NonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, workloadutil.NonNegative(int64(spec.Ordinals.Start), p.Child("ordinals", "start"))...)
	}

	sel, selErrs := workloadutil.ValidateSelector(spec.Selector, "statefulset", p.Child("selector"))
	errs = append(errs, selErrs...)
	tp := p.Child("template")
	errs = append(errs, workloadutil.ValidateTemplateLabels(sel, &spec.Template, tp)...)
	errs = append(errs, podspec.ValidatePodTemplateSpec(withClaimVolumes(spec), tp)...)
	return append(errs, workloadutil.ValidateRestartAlways(&spec.Template, "StatefulSet", tp)...)
}

// withClaimVolumes returns the pod template as the controller will use it:
// each volume claim template becomes a volume, so mounts of claims are valid.
func withClaimVolumes(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	if len(spec.VolumeClaimTemplates) == 0 {
		return &spec.Template
	}
	t := spec.Template.DeepCopy()
	have := map[string]bool{}
	for _, v := range t.Spec.Volumes {
		have[v.Name] = true
	}
	for _, c := range spec.VolumeClaimTemplates {
		if c.Name == "" || have[c.Name] {
			continue
		}
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{
			Name:         c.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}},
		})
	}
	return t
}

func validateUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(p.Child("rollingUpdate"), s.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return validateRollingUpdate(s.RollingUpdate, p.Child("rollingUpdate"))
		}
	default:
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("must be '%s' or '%s'",
			appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType))}
	}
	return nil
}

func validateRollingUpdate(ru *appsv1.RollingUpdateStatefulSetStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ru.Partition != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*ru.Partition), p.Child("partition"))...)
	}
	if mu := ru.MaxUnavailable; mu != nil {
		mp := p.Child("maxUnavailable")
		errs = append(errs, workloadutil.ValidateIntOrPercent(*mu, mp)...)
		if workloadutil.IntOrPercentValue(*mu) == 0 {
			errs = append(errs, field.Invalid(mp, *mu, "cannot be 0"))
		}
		errs = append(errs, workloadutil.NotMoreThan100Percent(*mu, mp)...)
	}
	return errs
}

func validateRetention(policy appsv1.PersistentVolumeClaimRetentionPolicyType, p *field.Path) field.ErrorList {
	switch policy {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, policy, retentionPolicies)}
}

// validateUpdate allows changes only to the fields upstream lets users
// change on a stateful set.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	spec := s.Spec.DeepCopy()
	spec.Replicas = oldS.Spec.Replicas
	spec.Template = oldS.Spec.Template
	spec.UpdateStrategy = oldS.Spec.UpdateStrategy
	spec.MinReadySeconds = oldS.Spec.MinReadySeconds
	spec.Ordinals = oldS.Spec.Ordinals
	spec.RevisionHistoryLimit = oldS.Spec.RevisionHistoryLimit
	spec.PersistentVolumeClaimRetentionPolicy = oldS.Spec.PersistentVolumeClaimRetentionPolicy
	oldSpec := oldS.Spec.DeepCopy()
	// The claim templates' apiVersion and kind are defaulted on the new
	// object but not kept by every encoding of the stored one; they are not
	// a change.
	for _, sp := range []*appsv1.StatefulSetSpec{spec, oldSpec} {
		for i := range sp.VolumeClaimTemplates {
			sp.VolumeClaimTemplates[i].TypeMeta = metav1.TypeMeta{}
		}
	}
	if !apiequality.Semantic.DeepEqual(*spec, *oldSpec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}
