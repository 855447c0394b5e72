package prioritylevelconfigurations

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// declarative gives the errors of upstream's declarative validation of a
// v1 spec (its +k8s tags, beta in 1.37), in upstream's order, with their
// empty details: spec.type and spec.limited.limitResponse.type are
// required; the member its discriminator selects (exempt by "Exempt",
// limited by "Limited", queuing by "Queue") may be given, limited and
// queuing must be, and any other member is forbidden. On an update (old
// not nil) what did not change is not looked at again.
func declarative(spec, old *flowcontrolv1.PriorityLevelConfigurationSpec) field.ErrorList {
	if old != nil && equality.Semantic.DeepEqual(spec, old) {
		return nil
	}
	p := field.NewPath("spec")
	var errs field.ErrorList
	sameType := old != nil && spec.Type == old.Type
	if !sameType || !equality.Semantic.DeepEqual(spec.Exempt, old.Exempt) {
		if spec.Type != flowcontrolv1.PriorityLevelEnablementExempt && spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), ""))
		}
	}
	limitedChanged := old == nil || !equality.Semantic.DeepEqual(spec.Limited, old.Limited)
	if !sameType || limitedChanged {
		errs = append(errs, member(spec.Type == flowcontrolv1.PriorityLevelEnablementLimited, spec.Limited != nil, p.Child("limited"))...)
	}
	if !sameType && spec.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), ""))
	}
	if spec.Limited != nil && limitedChanged {
		var oldResponse *flowcontrolv1.LimitResponse
		if old != nil && old.Limited != nil {
			oldResponse = &old.Limited.LimitResponse
		}
		errs = append(errs, declarativeResponse(&spec.Limited.LimitResponse, oldResponse, p.Child("limited", "limitResponse"))...)
	}
	return errs
}

// declarativeResponse checks a limit response that is new or changed.
func declarativeResponse(lr, old *flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	if old != nil && equality.Semantic.DeepEqual(lr, old) {
		return nil
	}
	errs := member(lr.Type == flowcontrolv1.LimitResponseTypeQueue, lr.Queuing != nil, p.Child("queuing"))
	if (old == nil || lr.Type != old.Type) && lr.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), ""))
	}
	return errs
}

// member checks a member that must be set when its discriminator selects
// it and must not be otherwise.
func member(selected, set bool, p *field.Path) field.ErrorList {
	switch {
	case selected && !set:
		return field.ErrorList{field.Required(p, "")}
	case !selected && set:
		return field.ErrorList{field.Forbidden(p, "")}
	}
	return nil
}
