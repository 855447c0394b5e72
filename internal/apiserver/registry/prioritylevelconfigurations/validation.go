package prioritylevelconfigurations

import (
	"context"
	"fmt"

	"orch/internal/apiserver/registry"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
	"k8s.io/utils/ptr"
)

// The values upstream accepts, sorted as its messages list them.
var (
	types         = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	responseTypes = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// maxQueues is the most queues a level may have.
const maxQueues int32 = 10 * 1000 * 1000

// mandatory are the specs the mandatory levels must have, by name.
var mandatory = func() map[string]*flowcontrolv1.PriorityLevelConfigurationSpec {
	m := map[string]*flowcontrolv1.PriorityLevelConfigurationSpec{}
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		m[pl.Name] = &pl.Spec
	}
	return m
}()

func validateCreate(obj runtime.Object) field.ErrorList {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	return withDeclarative(validateLevel(pl), &pl.Spec, nil)
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	return withDeclarative(validateLevel(pl), &pl.Spec, &old.(*flowcontrolv1.PriorityLevelConfiguration).Spec)
}

// validateStatusUpdate checks what a write through /status may change.
func validateStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateStatus(&obj.(*flowcontrolv1.PriorityLevelConfiguration).Status)
}

// withDeclarative combines the handwritten errors with those of upstream's
// declarative validation of the v1 spec, as upstream's apiserver does with
// its beta declarative rules enforced (the default in 1.37): a handwritten
// error the declarative rules also find gives way to theirs, which come
// last.
func withDeclarative(errs field.ErrorList, spec, old *flowcontrolv1.PriorityLevelConfigurationSpec) field.ErrorList {
	dv := declarative(spec, old).MarkBeta()
	return append(validate.FilterCoveredHandwrittenErrors(context.Background(), errs, dv, true), dv...)
}

// validateLevel is upstream's handwritten validation of a priority level
// (ObjectMeta is the handlers'): the v1beta3 round-trip annotation is
// forbidden, the spec, that a mandatory level ("exempt", "catch-all") has
// its bootstrap spec (the exempt level may change its spec.exempt), and
// the status. Errors the declarative rules cover are marked so.
func validateLevel(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	var errs field.ErrorList
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	p := field.NewPath("spec")
	errs = append(errs, validateSpec(pl.Name, &pl.Spec, p)...)
	if want, ok := mandatory[pl.Name]; ok {
		have := pl.Spec.DeepCopy()
		detail := fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			have.Exempt = want.Exempt
			detail = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
		}
		if !equality.Semantic.DeepEqual(have, want) {
			errs = append(errs, field.Invalid(p, pl.Spec, detail))
		}
	}
	return append(errs, validateStatus(&pl.Status)...)
}

func validateSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited").MarkCoveredByDeclarative())
		}
		if e := spec.Exempt; e != nil {
			ep := p.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(ep.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			errs = append(errs, validateLendable(e.LendablePercent, ep.Child("lendablePercent"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited").MarkCoveredByDeclarative())
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited").MarkCoveredByDeclarative())
		} else {
			errs = append(errs, validateLimited(spec.Limited, p.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "").MarkCoveredByDeclarative())
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, types))
	}
	return errs
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if shares := ptr.Deref(l.NominalConcurrencyShares, 0); shares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), shares, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, p.Child("limitResponse"))...)
	errs = append(errs, validateLendable(l.LendablePercent, p.Child("lendablePercent"))...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLendable(percent *int32, p *field.Path) field.ErrorList {
	if percent != nil && (*percent < 0 || *percent > 100) {
		return field.ErrorList{field.Invalid(p, *percent, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited").MarkCoveredByDeclarative()}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited").MarkCoveredByDeclarative()}
		}
		return validateQueuing(lr.Queuing, p.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "").MarkCoveredByDeclarative()}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), lr.Type, responseTypes)}
	}
	return nil
}

// validateQueuing wants positive numbers, no more than 10^7 queues, a hand
// no larger than the queues, and few enough hands that shuffle sharding
// can deal them from a 60-bit hash.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	hp := p.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(hp, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(hp, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(hp, q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d",
			q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}

// validateStatus wants each condition with a type, and no type twice.
func validateStatus(status *flowcontrolv1.PriorityLevelConfigurationStatus) field.ErrorList {
	return registry.ValidateConditionTypes(field.NewPath("status", "conditions"), status.Conditions,
		func(c flowcontrolv1.PriorityLevelConfigurationCondition) flowcontrolv1.PriorityLevelConfigurationConditionType {
			return c.Type
		})
}
