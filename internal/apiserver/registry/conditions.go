package registry

import "k8s.io/apimachinery/pkg/util/validation/field"

// ValidateConditionTypes wants each of conditions (at path) to have a
// type, and no type twice, as upstream's validation of the status
// conditions of several kinds (flowcontrol's) does; typeOf reads a
// condition's type.
func ValidateConditionTypes[C any, T ~string](path *field.Path, conditions []C, typeOf func(C) T) field.ErrorList {
	var errs field.ErrorList
	seen := map[T]bool{}
	for i, c := range conditions {
		tp := path.Index(i).Child("type")
		t := typeOf(c)
		if seen[t] {
			errs = append(errs, field.Duplicate(tp, t))
		}
		seen[t] = true
		if t == "" {
			errs = append(errs, field.Required(tp, ""))
		}
	}
	return errs
}
