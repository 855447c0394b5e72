package drautil

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// effects are the taint effects, sorted as upstream lists them in errors.
var effects = []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}

var operators = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}

// DefaultTaint is upstream's: a taint without timeAdded gets the current
// time, to the second (what survives encoding).
func DefaultTaint(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

// DefaultTolerations is upstream's: a toleration without an operator gets
// Equal.
func DefaultTolerations(tolerations []resourcev1.DeviceToleration) {
	for i := range tolerations {
		if tolerations[i].Operator == "" {
			tolerations[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

// ValidateTaint checks a taint: a qualified key, a label value, and an
// effect among the known ones. An effect the stored taint (old, may be
// nil) already had is not checked again.
func ValidateTaint(t resourcev1.DeviceTaint, old *resourcev1.DeviceTaint, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelName(t.Key, path.Child("key"))
	if t.Value != "" {
		errs = append(errs, ValidateLabelValue(t.Value, path.Child("value"))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(path.Child("effect"), ""))
		case !sets.New(effects...).Has(t.Effect):
			errs = append(errs, field.NotSupported(path.Child("effect"), t.Effect, effects))
		}
	}
	return errs
}

// ValidateTolerations checks each toleration: an optional qualified key,
// the operator Exists without a value or Equal with a label value, and an
// optional known effect.
func ValidateTolerations(tolerations []resourcev1.DeviceToleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		switch t.Operator {
		case resourcev1.DeviceTolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
			}
		case resourcev1.DeviceTolerationOpEqual:
			errs = append(errs, ValidateLabelValue(t.Value, p.Child("value"))...)
		case "":
			errs = append(errs, field.Required(p.Child("operator"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, operators))
		}
		if t.Effect != "" && !sets.New(effects...).Has(t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, effects))
		}
	}
	return errs
}

// ValidateBindingConditions checks the binding conditions and binding
// failure conditions of a device (or of its allocation): at most 4 of
// each, qualified names, no repeats, none in both, and either both or
// neither.
func ValidateBindingConditions(conditions, failures []string, path *field.Path) field.ErrorList {
	condPath, failPath := path.Child("bindingConditions"), path.Child("bindingFailureConditions")
	errs := ValidateList(conditions, resourcev1.BindingConditionsMaxSize, condPath, metav1validation.ValidateLabelName)
	errs = append(errs, ValidateList(failures, resourcev1.BindingFailureConditionsMaxSize, failPath, metav1validation.ValidateLabelName)...)
	seen := sets.New[string]()
	for i, c := range conditions {
		if seen.Has(c) {
			errs = append(errs, field.Duplicate(condPath.Index(i), c))
		}
		seen.Insert(c)
	}
	seenFailures := sets.New[string]()
	for i, c := range failures {
		if seenFailures.Has(c) {
			errs = append(errs, field.Duplicate(failPath.Index(i), c))
		}
		seenFailures.Insert(c)
		if seen.Has(c) {
			errs = append(errs, field.Invalid(failPath.Index(i), c, "bindingFailureConditions must not overlap with bindingConditions"))
		}
	}
	if len(conditions) == 0 && len(failures) > 0 {
		errs = append(errs, field.Invalid(condPath, conditions, "bindingConditions are required to use bindingFailureConditions"))
	}
	if len(failures) == 0 && len(conditions) > 0 {
		errs = append(errs, field.Invalid(failPath, failures, "bindingFailureConditions are required to use bindingConditions"))
	}
	return errs
}
