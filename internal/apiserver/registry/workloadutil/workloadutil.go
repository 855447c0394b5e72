// Package workloadutil holds the small pieces the apps and batch registry
// entries share: selector and int-or-percent checks, and the container cells
// of their tables. It follows upstream's apps validation helpers.
package workloadutil

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ContainerCells returns the comma-separated names and images of containers,
// as the CONTAINERS and IMAGES columns show them.
func ContainerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, 0, len(containers))
	im := make([]string, 0, len(containers))
	for _, c := range containers {
		n = append(n, c.Name)
		im = append(im, c.Image)
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// SelectorString renders a label selector for the SELECTOR column and the
// scale subresource; an invalid selector shows as "<invalid>".
func SelectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return "<invalid>"
	}
	return sel.String()
}

// ValidateSelector checks the spec.selector of a workload: it is required,
// well formed and not empty (kind names the workload in the message, e.g.
// "deployment"). It returns the parsed selector (one that selects nothing
// when the selector is missing) or nil when it cannot be parsed.
func ValidateSelector(s *metav1.LabelSelector, kind string, path *field.Path) (labels.Selector, field.ErrorList) {
	if s == nil {
		return labels.Nothing(), field.ErrorList{field.Required(path, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path, s, "empty selector is invalid for "+kind))
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		errs = append(errs, field.Invalid(path, s, "invalid label selector"))
		return nil, errs
	}
	return sel, errs
}

// ValidateTemplateLabels checks that a selector selects the labels of the pod
// template it belongs to (path is the template's path).
func ValidateTemplateLabels(sel labels.Selector, t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	if sel == nil || sel.Empty() || sel.Matches(labels.Set(t.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`")}
}

// ValidateRestartAlways checks the template rules shared by the long-running
// workloads: restartPolicy Always and no activeDeadlineSeconds (kind names the
// workload in the message, e.g. "ReplicaSet").
func ValidateRestartAlways(t *corev1.PodTemplateSpec, kind string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(path.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// NonNegative checks that a value is not negative.
func NonNegative(v int64, path *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(v, path)
}

// ValidateIntOrPercent checks that v is a non-negative integer or a valid
// percentage such as "25%".
func ValidateIntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(path, v, msg))
		}
		return errs
	case intstr.Int:
		return NonNegative(int64(v.IntValue()), path)
	default:
		return field.ErrorList{field.Invalid(path, v, "must be an integer or percentage (e.g '5%')")}
	}
}

// percent returns the number in a valid percentage string.
func percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, true
}

// IntOrPercentValue returns the number in v, whether an integer or a percentage.
func IntOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percent(v); ok {
		return n
	}
	return v.IntValue()
}

// NotMoreThan100Percent rejects a percentage above 100%.
func NotMoreThan100Percent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if n, ok := percent(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(path, v, "must not be greater than 100%")}
	}
	return nil
}
