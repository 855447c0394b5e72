package resourceslices

import (
	"fmt"
	"math"

	"gopkg.in/inf.v0"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/drautil"
)

// maxValidValues is upstream's limit on the valid values of a request
// policy.
const maxValidValues = 10

// validateCapacity checks a capacity's request policy: only a device
// allocated several times at once (multiple) may have one, and then it
// gives a default and either the valid values or a valid range.
func validateCapacity(c resourcev1.DeviceCapacity, multiple bool, p *field.Path) field.ErrorList {
	policy := c.RequestPolicy
	if policy == nil {
		return nil
	}
	pp := p.Child("requestPolicy")
	switch {
	case !multiple:
		return field.ErrorList{field.Forbidden(pp, "allowMultipleAllocations must be true")}
	case len(policy.ValidValues) > 0 && policy.ValidRange != nil:
		return field.ErrorList{field.Forbidden(pp, `exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`)}
	case len(policy.ValidValues) > 0:
		if policy.Default == nil {
			return field.ErrorList{field.Required(pp.Child("default"), "required when validValues is defined")}
		}
		return validateValidValues(*policy.Default, c.Value, policy.ValidValues, pp.Child("validValues"))
	case policy.ValidRange != nil:
		if policy.Default == nil {
			return field.ErrorList{field.Required(pp.Child("default"), "required when validRange is defined")}
		}
		return validateRange(*policy.Default, c.Value, *policy.ValidRange, pp.Child("validRange"))
	}
	return nil
}

// validateValidValues wants at most 10 distinct values in ascending order,
// none above the capacity, the default among them.
func validateValidValues(def, capacity resource.Quantity, values []resource.Quantity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := 1; i < len(values); i++ {
		if values[i-1].Cmp(values[i]) > 0 {
			errs = append(errs, field.Invalid(p.Index(i), values[i].String(), "values must be sorted in ascending order"))
		}
	}
	found := false
	errs = append(errs, drautil.ValidateSet(values, maxValidValues, p,
		func(q resource.Quantity) string { return q.AsDec().String() },
		func(q resource.Quantity, p *field.Path) field.ErrorList {
			found = found || q.Cmp(def) == 0
			if q.Cmp(capacity) > 0 {
				return field.ErrorList{field.Invalid(p, q.String(), fmt.Sprintf("option is larger than capacity value: %s", capacity.String()))}
			}
			return nil
		})...)
	if !found {
		errs = append(errs, field.Invalid(p, def.String(), "default value is not valid according to the requestPolicy"))
	}
	return errs
}

// validateRange wants a minimum, a default and a maximum in order within
// the capacity, and the default and the maximum a whole number of steps
// above the minimum.
func validateRange(def, capacity resource.Quantity, r resourcev1.CapacityRequestPolicyRange, p *field.Path) field.ErrorList {
	if r.Min == nil {
		return field.ErrorList{field.Required(p.Child("min"), "required when validRange is defined")}
	}
	var errs field.ErrorList
	if r.Min.Cmp(capacity) > 0 {
		errs = append(errs, field.Invalid(p.Child("min"), r.Min.String(), fmt.Sprintf("min is larger than capacity value: %s", capacity.String())))
	}
	if def.Cmp(*r.Min) < 0 {
		errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is less than min: %s", r.Min.String())))
	}
	if r.Max != nil {
		if r.Min.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), r.Min.String(), fmt.Sprintf("min is larger than max: %s", r.Max.String())))
		}
		if r.Max.Cmp(capacity) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), r.Max.String(), fmt.Sprintf("max is larger than capacity value: %s", capacity.String())))
		}
		if def.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is more than max: %s", r.Max.String())))
		}
	}
	named := map[string]*resource.Quantity{"default": &def, "min": r.Min, "max": r.Max, "step": r.Step}
	order := []string{"default", "min", "max", "step"}
	// Fractional ranges (beta, on by default) are counted in thousandths,
	// which every value must be a whole number of.
	milli := fractional(def) || fractional(*r.Min) || (r.Max != nil && fractional(*r.Max)) || (r.Step != nil && fractional(*r.Step))
	if milli {
		bad := false
		for _, name := range order {
			if q := named[name]; q != nil && q.Cmp(*resource.NewMilliQuantity(q.MilliValue(), q.Format)) != 0 {
				errs = append(errs, field.Invalid(p.Child(name), q.String(), "value cannot be represented as a milli value"))
				bad = true
			}
		}
		if bad {
			return errs
		}
	}
	if r.Step == nil {
		return errs
	}
	if r.Step.Sign() <= 0 {
		return append(errs, field.Invalid(p.Child("step"), r.Step.String(), "must be greater than zero"))
	}
	oneStep := r.Min.DeepCopy()
	oneStep.Add(*r.Step)
	if oneStep.Cmp(capacity) > 0 {
		errs = append(errs, field.Invalid(p.Child("step"), r.Step.String(), fmt.Sprintf("one step %s is larger than capacity value: %s", oneStep.String(), capacity.String())))
	}
	if !milli {
		// Whole values are counted as int64s, which they must fit.
		bad := false
		for _, name := range order {
			if q := named[name]; q != nil {
				switch {
				case q.Sign() < 0:
					errs = append(errs, field.Invalid(p.Child(name), q.String(), apivalidation.IsNegativeErrorMsg))
					bad = true
				case q.CmpInt64(math.MaxInt64) > 0:
					errs = append(errs, field.Invalid(p.Child(name), q.String(), "must not be larger than 9223372036854775807"))
					bad = true
				}
			}
		}
		if bad {
			return errs
		}
	}
	errs = append(errs, validateStep(def, *r.Min, *r.Step, milli, p.Child("step"))...)
	if r.Max != nil {
		errs = append(errs, validateStep(*r.Max, *r.Min, *r.Step, milli, p.Child("step"))...)
	}
	return errs
}

// validateStep wants value a whole number of steps above min.
func validateStep(value, min, step resource.Quantity, milli bool, p *field.Path) field.ErrorList {
	v, m, s := value.Value(), min.Value(), step.Value()
	if milli {
		v, m, s = value.MilliValue(), min.MilliValue(), step.MilliValue()
	}
	if (v-m)%s != 0 {
		return field.ErrorList{field.Invalid(p, value.String(), fmt.Sprintf("value is not a multiple of a given step (%s) from (%s)", step.String(), min.String()))}
	}
	return nil
}

// fractional is true when q is not a whole number.
func fractional(q resource.Quantity) bool {
	d := q.AsDec()
	return d.Cmp(new(inf.Dec).Round(d, 0, inf.RoundDown)) != 0
}
