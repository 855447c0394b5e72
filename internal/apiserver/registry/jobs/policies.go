package jobs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/workloadutil"
)

const (
	maxPodFailurePolicyRules   = 20
	maxOnExitCodesValues       = 255
	maxOnPodConditionsPatterns = 20
	maxSuccessPolicyRules      = 20
	maxSucceededIndexesLength  = 64 * 1024
)

var (
	failureActions = []string{
		string(batchv1.PodFailurePolicyActionCount), string(batchv1.PodFailurePolicyActionFailIndex),
		string(batchv1.PodFailurePolicyActionFailJob), string(batchv1.PodFailurePolicyActionIgnore),
	}
	exitCodeOperators = []string{string(batchv1.PodFailurePolicyOnExitCodesOpIn), string(batchv1.PodFailurePolicyOnExitCodesOpNotIn)}
	conditionStatuses = []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
)

func validatePodFailurePolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.PodFailurePolicy.Rules
	rp := p.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range rules {
		errs = append(errs, validateFailureRule(spec, &rules[i], rp.Index(i), containers)...)
	}
	return errs
}

func validateFailureRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	ap := p.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(ap, fmt.Sprintf("valid values: %q", failureActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(ap, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(failureActions, string(rule.Action)):
		errs = append(errs, field.NotSupported(ap, rule.Action, failureActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, p.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		cp := p.Child("onPodConditions")
		if len(rule.OnPodConditions) > maxOnPodConditionsPatterns {
			errs = append(errs, field.TooMany(cp, len(rule.OnPodConditions), maxOnPodConditionsPatterns))
		}
		for j, pattern := range rule.OnPodConditions {
			pp := cp.Index(j)
			for _, msg := range validation.IsQualifiedName(string(pattern.Type)) {
				errs = append(errs, field.Invalid(pp.Child("type"), pattern.Type, msg))
			}
			switch {
			case pattern.Status == "":
				errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", conditionStatuses)))
			case !slices.Contains(conditionStatuses, string(pattern.Status)):
				errs = append(errs, field.NotSupported(pp.Child("status"), pattern.Status, conditionStatuses))
			}
		}
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	op := p.Child("operator")
	switch {
	case req.Operator == "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", exitCodeOperators)))
	case !slices.Contains(exitCodeOperators, string(req.Operator)):
		errs = append(errs, field.NotSupported(op, req.Operator, exitCodeOperators))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(p.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	switch {
	case len(req.Values) == 0:
		errs = append(errs, field.Invalid(vp, req.Values, "at least one value is required"))
	case len(req.Values) > maxOnExitCodesValues:
		errs = append(errs, field.TooMany(vp, len(req.Values), maxOnExitCodesValues))
	}
	seen := sets.New[int32]()
	for j, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vp.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(vp.Index(j), v))
		}
		seen.Insert(v)
	}
	if !slices.IsSorted(req.Values) {
		errs = append(errs, field.Invalid(vp, req.Values, "must be ordered"))
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.SuccessPolicy.Rules
	rp := p.Child("rules")
	if len(rules) == 0 {
		errs = append(errs, field.Required(rp, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxSuccessPolicyRules))
	}
	completions := int32(0)
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i, rule := range rules {
		p := rp.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := p.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
				errs = append(errs, field.TooLong(ip, *rule.SucceededIndexes, maxSucceededIndexesLength))
			}
			var err error
			if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(ip, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if c := rule.SucceededCount; c != nil {
			cp := p.Child("succeededCount")
			errs = append(errs, workloadutil.NonNegative(int64(*c), cp)...)
			if *c > completions {
				errs = append(errs, field.Invalid(cp, *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *c > total {
				errs = append(errs, field.Invalid(cp, *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// countIndexes parses an index list such as "1,3-5,7" (increasing, each
// below completions) and returns how many indexes it names.
func countIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range strings.Split(s, ",") {
		parts := strings.Split(interval, "-")
		if len(parts) > 2 {
			return 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
		}
		var bounds []int32
		for _, part := range parts {
			n, err := strconv.Atoi(part)
			if err != nil {
				return 0, fmt.Errorf("cannot convert string to integer for index: %q", part)
			}
			if n >= int(completions) {
				return 0, fmt.Errorf("too large index: %q", part)
			}
			bounds = append(bounds, int32(n))
		}
		x, y := bounds[0], bounds[len(bounds)-1]
		if len(bounds) == 2 && x >= y {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}
