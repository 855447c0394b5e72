package jobs

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

const (
	maxParallelismForIndexedJob = 100000
	maxFailedIndexes            = 100000
	completionsSoftLimit        = 100000
	parallelismLimitForHigh     = 10000
	maxFailedIndexesForHigh     = 10000
	maxManagedByLength          = 63
)

func validate(obj runtime.Object) field.ErrorList {
	job := obj.(*batchv1.Job)
	errs := validateGeneratedSelector(job)
	errs = append(errs, validateSpecAndSelector(&job.Spec, field.NewPath("spec"))...)
	if c := job.Spec.Completions; c != nil && *c > 0 && isIndexed(&job.Spec) {
		// Indexed pods are named <job>-<index>; the last one must be a valid hostname.
		last := fmt.Sprintf("%s-%d", job.Name, *c-1)
		if len(validation.IsDNS1123Label(last)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, "will not able to create pod with invalid DNS label: "+last))
		}
	}
	return errs
}

func isIndexed(spec *batchv1.JobSpec) bool {
	return spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
}

// validateGeneratedSelector checks, for jobs whose selector the server
// generates, that the pod template carries the generated labels and the
// selector selects them.
func validateGeneratedSelector(job *batchv1.Job) field.ErrorList {
	if (job.Spec.ManualSelector != nil && *job.Spec.ManualSelector) || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	expected := map[string]string{
		LegacyControllerUIDLabel: string(job.UID), LegacyJobNameLabel: job.Name,
		batchv1.ControllerUidLabel: string(job.UID), batchv1.JobNameLabel: job.Name,
	}
	lp := field.NewPath("spec", "template", "metadata", "labels")
	for _, key := range []string{LegacyControllerUIDLabel, LegacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		value, ok := job.Spec.Template.Labels[key]
		switch {
		case !ok:
			errs = append(errs, field.Required(lp.Key(key), key))
		case value != expected[key]:
			errs = append(errs, field.Invalid(lp.Key(key), job.Spec.Template.Labels, fmt.Sprintf("must be '%s'", expected[key])))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateSpecAndSelector checks a job's spec including its selector, which
// must select the pod template.
func validateSpecAndSelector(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	errs := ValidateSpec(spec, p)
	if spec.Selector == nil {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// ValidateSpec checks a job spec apart from its selector; cron jobs apply it
// to their job template.
func ValidateSpec(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(v *int32, name string) {
		if v != nil {
			errs = append(errs, workloadutil.NonNegative(int64(*v), p.Child(name))...)
		}
	}
	nonNegative(spec.Parallelism, "parallelism")
	nonNegative(spec.Completions, "completions")
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, workloadutil.NonNegative(*spec.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	nonNegative(spec.BackoffLimit, "backoffLimit")
	nonNegative(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonNegative(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	if spec.MaxFailedIndexes != nil {
		nonNegative(spec.MaxFailedIndexes, "maxFailedIndexes")
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		errs = append(errs, validation.IsDomainPrefixedPath(p.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(p.Child("managedBy"), *spec.ManagedBy, maxManagedByLength))
		}
	}
	errs = append(errs, validateCompletionMode(spec, p)...)
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, p.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !isIndexed(spec) {
			errs = append(errs, field.Invalid(p.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, p.Child("successPolicy"))...)
		}
	}
	if rp := spec.PodReplacementPolicy; rp != nil {
		rpp := p.Child("podReplacementPolicy")
		switch {
		case spec.PodFailurePolicy != nil && *rp != batchv1.Failed:
			errs = append(errs, field.NotSupported(rpp, *rp, []string{string(batchv1.Failed)}))
		case *rp != batchv1.Failed && *rp != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(rpp, *rp, []string{string(batchv1.Failed), string(batchv1.TerminatingOrFailed)}))
		}
	}

	tp := p.Child("template")
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	restart := spec.Template.Spec.RestartPolicy
	rp := tp.Child("spec", "restartPolicy")
	switch {
	case restart == corev1.RestartPolicyAlways || restart == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case restart != corev1.RestartPolicyOnFailure && restart != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, restart, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	case spec.PodFailurePolicy != nil && restart != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, restart, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

func validateCompletionMode(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.CompletionMode != nil && !isIndexed(spec) && *spec.CompletionMode != batchv1.NonIndexedCompletion {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *spec.CompletionMode,
			[]string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
	}
	if !isIndexed(spec) {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
		return errs
	}
	if spec.Completions == nil {
		errs = append(errs, field.Required(p.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if mf := spec.MaxFailedIndexes; mf != nil {
		if spec.Completions != nil && *mf > *spec.Completions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *mf, "must be less than or equal to completions"))
		}
		if *mf > maxFailedIndexes {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *mf, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexes)))
		}
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(p.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHigh {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *spec.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHigh, completionsSoftLimit)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForHigh {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *spec.MaxFailedIndexes,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesForHigh, completionsSoftLimit)))
		}
	}
	return errs
}

// validateUpdate keeps a job's selector, template and modes fixed. A
// suspended job that never started may still change where its pods run.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(*batchv1.Job), old.(*batchv1.Job)
	spec, oldSpec := &job.Spec, &oldJob.Spec
	p := field.NewPath("spec")
	immutable := func(a, b interface{}, name string) field.ErrorList {
		return apivalidation.ValidateImmutableField(a, b, p.Child(name))
	}
	var errs field.ErrorList
	if isIndexed(spec) {
		// Indexed jobs may scale, keeping completions equal to parallelism.
		if !apiequality.Semantic.DeepEqual(spec.Completions, oldSpec.Completions) && spec.Completions != nil &&
			(spec.Parallelism == nil || *spec.Completions != *spec.Parallelism) {
			errs = append(errs, field.Invalid(p.Child("completions"), spec.Completions, "can only be modified in tandem with spec.parallelism"))
		}
	} else {
		errs = append(errs, immutable(spec.Completions, oldSpec.Completions, "completions")...)
	}
	errs = append(errs, immutable(spec.Selector, oldSpec.Selector, "selector")...)
	errs = append(errs, validateTemplateUpdate(job, oldJob, p.Child("template"))...)
	errs = append(errs, immutable(spec.CompletionMode, oldSpec.CompletionMode, "completionMode")...)
	errs = append(errs, immutable(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, "podFailurePolicy")...)
	errs = append(errs, immutable(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, "backoffLimitPerIndex")...)
	errs = append(errs, immutable(spec.ManagedBy, oldSpec.ManagedBy, "managedBy")...)
	return append(errs, immutable(spec.SuccessPolicy, oldSpec.SuccessPolicy, "successPolicy")...)
}

func validateTemplateUpdate(job, oldJob *batchv1.Job, p *field.Path) field.ErrorList {
	template, oldTemplate := &job.Spec.Template, &oldJob.Spec.Template
	suspended := oldJob.Spec.Suspend != nil && *oldJob.Spec.Suspend
	if suspended && oldJob.Status.StartTime == nil {
		// Scheduling directives may change until the job first starts.
		o := oldTemplate.DeepCopy()
		switch {
		case template.Spec.Affinity == nil && o.Spec.Affinity != nil:
			o.Spec.Affinity.NodeAffinity = nil
			if *o.Spec.Affinity == (corev1.Affinity{}) {
				o.Spec.Affinity = nil
			}
		case template.Spec.Affinity != nil && o.Spec.Affinity == nil:
			o.Spec.Affinity = &corev1.Affinity{NodeAffinity: template.Spec.Affinity.NodeAffinity}
		case template.Spec.Affinity != nil && o.Spec.Affinity != nil:
			o.Spec.Affinity.NodeAffinity = template.Spec.Affinity.NodeAffinity
		}
		o.Spec.NodeSelector = template.Spec.NodeSelector
		o.Spec.Tolerations = template.Spec.Tolerations
		o.Annotations = template.Annotations
		o.Labels = template.Labels
		o.Spec.SchedulingGates = template.Spec.SchedulingGates
		oldTemplate = o
	}
	return apivalidation.ValidateImmutableField(template, oldTemplate, p)
}
