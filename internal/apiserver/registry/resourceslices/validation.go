package resourceslices

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/drautil"
	"orch/internal/apiserver/registry/podspec"
)

// semver is a version as semver.org 2.0.0 writes it.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// validateSpec checks a slice's spec; old is the stored spec on an update.
func validateSpec(spec, old *resourcev1.ResourceSliceSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := drautil.ValidateDriverName(spec.Driver, p.Child("driver"))
	errs = append(errs, validatePool(spec.Pool, p.Child("pool"))...)
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Pool.Name, old.Pool.Name, p.Child("pool", "name"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Driver, old.Driver, p.Child("driver"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.NodeName, old.NodeName, p.Child("nodeName"))...)
	}
	errs = append(errs, validateNodeSelection(spec, p)...)
	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	maxDevices := resourcev1.ResourceSliceMaxDevices
	if advanced(spec) {
		maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	perDevice := spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection
	errs = append(errs, drautil.ValidateSet(spec.Devices, maxDevices, p.Child("devices"),
		func(d resourcev1.Device) string { return d.Name },
		func(d resourcev1.Device, p *field.Path) field.ErrorList {
			return validateDevice(d, oldDevice(old, d.Name), perDevice, p)
		})...)
	errs = append(errs, drautil.ValidateSet(spec.SharedCounters, resourcev1.ResourceSliceMaxCounterSets, p.Child("sharedCounters"),
		func(c resourcev1.CounterSet) string { return c.Name },
		func(c resourcev1.CounterSet, p *field.Path) field.ErrorList {
			errs := validateCounterName(c.Name, p.Child("name"))
			return append(errs, validateCounters(c.Counters, resourcev1.ResourceSliceMaxCountersPerCounterSet, p.Child("counters"))...)
		})...)
	return errs
}

func validatePool(pool resourcev1.ResourcePool, p *field.Path) field.ErrorList {
	errs := drautil.ValidatePoolName(pool.Name, p.Child("name"))
	if pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("resourceSliceCount"), pool.ResourceSliceCount, "must be greater than zero"))
	}
	if pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("generation"), pool.Generation, "must be greater than or equal to zero"))
	}
	return errs
}

const oneOfNodeSelection = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"

// validateNodeSelection wants exactly one way to say which nodes reach
// the devices: one node, a selector of one term, all nodes, or per device.
func validateNodeSelection(spec *resourcev1.ResourceSliceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	if spec.NodeName != nil {
		if *spec.NodeName == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), "", "must be either unset or set to a non-empty string"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, validateNodeName(*spec.NodeName, p.Child("nodeName"))...)
		}
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, podspec.ValidateNodeSelector(spec.NodeSelector, p.Child("nodeSelector"))...)
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), spec.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	errs = append(errs, trueOrUnset(spec.AllNodes, "`allNodes`", &set, p.Child("allNodes"))...)
	errs = append(errs, trueOrUnset(spec.PerDeviceNodeSelection, "`perDeviceNodeSelection`", &set, p.Child("perDeviceNodeSelection"))...)
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(p, oneOfNodeSelection))
	case len(set) > 1:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), oneOfNodeSelection+", but multiple fields are set"))
	}
	return errs
}

// trueOrUnset adds name to set when b is true and wants it unset otherwise.
func trueOrUnset(b *bool, name string, set *[]string, p *field.Path) field.ErrorList {
	switch {
	case b == nil:
		return nil
	case *b:
		*set = append(*set, name)
		return nil
	}
	return field.ErrorList{field.Invalid(p, false, "must be either unset or set to true")}
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// advanced is true when a device uses taints or counters, which lower the
// limit on devices per slice.
func advanced(spec *resourcev1.ResourceSliceSpec) bool {
	for _, d := range spec.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return true
		}
	}
	return false
}

func oldDevice(old *resourcev1.ResourceSliceSpec, name string) *resourcev1.Device {
	if old == nil {
		return nil
	}
	for i := range old.Devices {
		if old.Devices[i].Name == name {
			return &old.Devices[i]
		}
	}
	return nil
}

// validateDevice checks one device. Capacity and taints the stored device
// (old, may be nil) already had are not checked again.
func validateDevice(d resourcev1.Device, old *resourcev1.Device, perDevice bool, p *field.Path) field.ErrorList {
	errs := drautil.ValidateLabel(d.Name, p.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	if n := len(d.Attributes); n > resourcev1.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attribute values must not exceed %d", resourcev1.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	for _, name := range slices.Sorted(maps.Keys(d.Attributes)) {
		errs = append(errs, drautil.ValidateQualifiedName(name, p.Child("attributes"))...)
		errs = append(errs, validateAttribute(d.Attributes[name], p.Child("attributes").Key(truncate(string(name))))...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.Capacity, d.Capacity) {
		multiple := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
		for _, name := range slices.Sorted(maps.Keys(d.Capacity)) {
			errs = append(errs, drautil.ValidateQualifiedName(name, p.Child("capacity"))...)
			errs = append(errs, validateCapacity(d.Capacity[name], multiple, p.Child("capacity").Key(truncate(string(name))))...)
		}
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.Taints, d.Taints) {
		errs = append(errs, drautil.ValidateList(d.Taints, resourcev1.DeviceTaintsMaxLength, p.Child("taints"),
			func(t resourcev1.DeviceTaint, p *field.Path) field.ErrorList { return drautil.ValidateTaint(t, nil, p) })...)
	}
	errs = append(errs, drautil.ValidateSet(d.ConsumesCounters, resourcev1.ResourceSliceMaxDeviceCounterConsumptionsPerDevice, p.Child("consumesCounters"),
		func(c resourcev1.DeviceCounterConsumption) string { return c.CounterSet },
		func(c resourcev1.DeviceCounterConsumption, p *field.Path) field.ErrorList {
			errs := validateCounterName(c.CounterSet, p.Child("counterSet"))
			return append(errs, validateCounters(c.Counters, resourcev1.ResourceSliceMaxCountersPerDeviceCounterConsumption, p.Child("counters"))...)
		})...)
	errs = append(errs, validateDeviceNodeSelection(d, perDevice, p)...)
	return append(errs, drautil.ValidateBindingConditions(d.BindingConditions, d.BindingFailureConditions, p)...)
}

const oneOfDeviceNodeSelection = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"

// validateDeviceNodeSelection wants one way to select nodes per device
// when the slice asks for that, and none otherwise.
func validateDeviceNodeSelection(d resourcev1.Device, perDevice bool, p *field.Path) field.ErrorList {
	if !perDevice {
		if d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil {
			return field.ErrorList{field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec")}
		}
		return nil
	}
	var errs field.ErrorList
	var set []string
	if d.NodeName != nil {
		if *d.NodeName == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), "", "must not be empty"))
		} else {
			set = append(set, "`nodeName`")
			errs = append(errs, validateNodeName(*d.NodeName, p.Child("nodeName"))...)
		}
	}
	if d.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, podspec.ValidateNodeSelector(d.NodeSelector, p.Child("nodeSelector"))...)
	}
	errs = append(errs, trueOrUnset(d.AllNodes, "`allNodes`", &set, p.Child("allNodes"))...)
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(p, oneOfDeviceNodeSelection))
	case len(set) > 1:
		errs = append(errs, field.Invalid(p, fmt.Sprintf("{%s}", strings.Join(set, ", ")), oneOfDeviceNodeSelection))
	}
	return errs
}

// validateAttribute wants exactly one value; strings and versions (the
// latter semantic versions) of at most 64 characters.
func validateAttribute(a resourcev1.DeviceAttribute, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if a.BoolValue != nil {
		n++
	}
	if a.IntValue != nil {
		n++
	}
	if a.StringValue != nil {
		n++
		if len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p.Child("string"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	if v := a.VersionValue; v != nil {
		n++
		if !semver.MatchString(*v) {
			errs = append(errs, field.Invalid(p.Child("version"), *v, "must be a string compatible with semver.org spec 2.0.0"))
		}
		if len(*v) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p.Child("version"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "exactly one value must be specified"))
	case n > 1:
		errs = append(errs, field.Invalid(p, a, "exactly one value must be specified"))
	}
	return errs
}

func validateCounterName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return drautil.ValidateLabel(name, p)
}

// validateCounters wants at least one and at most max counters, named by
// DNS labels; any quantity is a valid counter.
func validateCounters(counters map[string]resourcev1.Counter, max int, p *field.Path) field.ErrorList {
	if len(counters) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(counters) > max {
		return field.ErrorList{field.TooMany(p, len(counters), max)}
	}
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(counters)) {
		errs = append(errs, drautil.ValidateLabel(name, p)...)
	}
	return errs
}

// truncate shortens a map key for an error's path, keeping its start and
// end, as upstream does for keys longer than a qualified name may be.
func truncate(key string) string {
	const max = resourcev1.DeviceMaxDomainLength + 1 + resourcev1.DeviceMaxIDLength
	if len(key) <= max {
		return key
	}
	const ellipsis = "..."
	keep := max - len(ellipsis)
	return key[:(keep+1)/2] + ellipsis + key[len(key)-keep/2:]
}
