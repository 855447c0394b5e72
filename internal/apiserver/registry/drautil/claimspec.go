package drautil

import (
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var allocationModes = []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}

// DefaultClaimSpec applies upstream's defaults to the requests of a claim
// (or of a template): allocation mode ExactCount, a count of 1 in that
// mode, and the operator Equal for tolerations.
func DefaultClaimSpec(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if e := r.Exactly; e != nil {
			defaultAllocationMode(&e.AllocationMode, &e.Count)
			DefaultTolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			defaultAllocationMode(&s.AllocationMode, &s.Count)
			DefaultTolerations(s.Tolerations)
		}
	}
}

func defaultAllocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// DropDisabledClaimFields removes from a claim's spec the derived
// attributes of its requests, an alpha feature upstream has off by default.
func DropDisabledClaimFields(spec *resourcev1.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			r.Exactly.DerivedAttributes = nil
		}
		for j := range r.FirstAvailable {
			r.FirstAvailable[j].DerivedAttributes = nil
		}
	}
}

// RequestNames are the names of a claim's requests, each with the names
// of its subrequests (nil for a request without).
type RequestNames map[string]sets.Set[string]

// GatherRequestNames returns the request names of a claim.
func GatherRequestNames(claim *resourcev1.DeviceClaim) RequestNames {
	names := RequestNames{}
	for _, r := range claim.Requests {
		var subs sets.Set[string]
		if len(r.FirstAvailable) > 0 {
			subs = sets.New[string]()
			for _, s := range r.FirstAvailable {
				subs.Insert(s.Name)
			}
		}
		names[r.Name] = subs
	}
	return names
}

// Has is true when ref names a request ("gpu") or a subrequest of one
// ("gpu/large").
func (n RequestNames) Has(ref string) bool {
	request, sub, isSub := strings.Cut(ref, "/")
	subs, ok := n[request]
	if !ok || strings.Contains(sub, "/") {
		return false
	}
	return !isSub || subs.Has(sub)
}

const badRequestRef = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

// ValidateRequestRef checks a reference to a request or subrequest of the
// claim.
func ValidateRequestRef(ref string, names RequestNames, path *field.Path) field.ErrorList {
	segments := strings.Split(ref, "/")
	if len(segments) > 2 {
		return field.ErrorList{field.Invalid(path, ref, badRequestRef)}
	}
	var errs field.ErrorList
	for _, s := range segments {
		errs = append(errs, ValidateLabel(s, path)...)
	}
	if !names.Has(ref) {
		errs = append(errs, field.Invalid(path, ref, badRequestRef))
	}
	return errs
}

// ValidateRequestRefs checks a list of at most 32 distinct references to
// requests of the claim.
func ValidateRequestRefs(refs []string, names RequestNames, path *field.Path) field.ErrorList {
	return ValidateSet(refs, resourcev1.DeviceRequestsMaxSize, path, Self, func(ref string, p *field.Path) field.ErrorList {
		return ValidateRequestRef(ref, names, p)
	})
}

// ValidateClaimSpec checks the spec of a claim: at most 32 requests with
// distinct names, at most 32 constraints and 32 configurations, which
// refer to requests of the claim.
func ValidateClaimSpec(spec *resourcev1.ResourceClaimSpec, path *field.Path) field.ErrorList {
	claim := &spec.Devices
	p := path.Child("devices")
	names := GatherRequestNames(claim)
	errs := ValidateSet(claim.Requests, resourcev1.DeviceRequestsMaxSize, p.Child("requests"),
		func(r resourcev1.DeviceRequest) string { return r.Name }, validateRequest)
	errs = append(errs, ValidateList(claim.Constraints, resourcev1.DeviceConstraintsMaxSize, p.Child("constraints"),
		func(c resourcev1.DeviceConstraint, p *field.Path) field.ErrorList {
			return validateConstraint(c, names, p)
		})...)
	errs = append(errs, ValidateList(claim.Config, resourcev1.DeviceConfigMaxSize, p.Child("config"),
		func(c resourcev1.DeviceClaimConfiguration, p *field.Path) field.ErrorList {
			errs := ValidateRequestRefs(c.Requests, names, p.Child("requests"))
			return append(errs, ValidateConfiguration(c.DeviceConfiguration, false, p)...)
		})...)
	return errs
}

func validateRequest(r resourcev1.DeviceRequest, path *field.Path) field.ErrorList {
	errs := ValidateLabel(r.Name, path.Child("name"))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(path, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(path, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, p := r.Exactly, path.Child("exactly")
		errs = append(errs, validateDeviceChoice(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, p)...)
	default:
		errs = append(errs, ValidateSet(r.FirstAvailable, resourcev1.FirstAvailableDeviceRequestMaxSize, path.Child("firstAvailable"),
			func(s resourcev1.DeviceSubRequest) string { return s.Name },
			func(s resourcev1.DeviceSubRequest, p *field.Path) field.ErrorList {
				errs := ValidateLabel(s.Name, p.Child("name"))
				return append(errs, validateDeviceChoice(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, p)...)
			})...)
	}
	return errs
}

// validateDeviceChoice checks what an exact request and a subrequest have
// in common: the class, the selectors, how many devices, the tolerations.
func validateDeviceChoice(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64,
	tolerations []resourcev1.DeviceToleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(path.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, ValidateSubdomain(class, path.Child("deviceClassName"))...)
	}
	errs = append(errs, ValidateSelectors(selectors, false, path.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(path.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(path.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("allocationMode"), mode, allocationModes))
	}
	return append(errs, ValidateTolerations(tolerations, path.Child("tolerations"))...)
}

func validateConstraint(c resourcev1.DeviceConstraint, names RequestNames, path *field.Path) field.ErrorList {
	errs := ValidateRequestRefs(c.Requests, names, path.Child("requests"))
	switch {
	case c.MatchAttribute != nil:
		errs = append(errs, ValidateFullyQualifiedName(*c.MatchAttribute, path.Child("matchAttribute"))...)
	case c.DistinctAttribute != nil:
		errs = append(errs, ValidateFullyQualifiedName(*c.DistinctAttribute, path.Child("distinctAttribute"))...)
	default:
		// Upstream's words, with consumable capacity (beta) on.
		errs = append(errs, field.Required(path, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
	}
	return errs
}
