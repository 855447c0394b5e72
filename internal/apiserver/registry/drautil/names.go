// Package drautil holds what the registry entries of resource.k8s.io
// (dynamic resource allocation) share: upstream's rules for driver, pool,
// device and attribute names, lists with a size limit, device selectors
// and their CEL expressions, the spec of a claim (a template's too),
// opaque device configuration, and device taints and tolerations.
//
// orch runs with upstream's default feature gates: what an alpha feature
// adds to the API (derived attributes, list-type attributes, ...) is
// dropped on write, as upstream does when the feature is off.
package drautil

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDriverName checks a driver name: required, at most 63
// characters, a DNS subdomain in any case (upstream's rule for CSI
// drivers).
func ValidateDriverName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.DriverNameMaxLength {
		errs = append(errs, field.TooLong(path, "", resourcev1.DriverNameMaxLength))
	}
	for _, msg := range content.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// ValidatePoolName checks a pool name: required, at most 253 characters,
// DNS subdomains separated by slashes.
func ValidatePoolName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(path, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, ValidateSubdomain(part, path)...)
	}
	return errs
}

// ValidateLabel checks a DNS-1123 label: the names of devices, requests
// and counters.
func ValidateLabel(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// ValidateSubdomain checks a DNS-1123 subdomain: the names of device
// classes, pool name segments.
func ValidateSubdomain(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// ValidateLabelValue checks a value that must be a label value (taints,
// tolerations).
func ValidateLabelValue(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelValue(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

// ValidateQualifiedName checks an attribute or capacity name: a C
// identifier of at most 32 characters, optionally after a driver name as
// its domain and a slash.
func ValidateQualifiedName(name resourcev1.QualifiedName, path *field.Path) field.ErrorList {
	parts := strings.Split(string(name), "/")
	switch len(parts) {
	case 1:
		return validateCIdentifier(parts[0], path)
	case 2:
		var errs field.ErrorList
		if parts[0] == "" {
			errs = append(errs, field.Invalid(path, "", "the domain must not be empty"))
		} else {
			errs = append(errs, ValidateDriverName(parts[0], path)...)
		}
		if parts[1] == "" {
			errs = append(errs, field.Invalid(path, "", "the name must not be empty"))
		} else {
			errs = append(errs, validateCIdentifier(parts[1], path)...)
		}
		return errs
	}
	// Upstream lets more than one slash through; so does orch.
	return nil
}

// ValidateFullyQualifiedName checks a qualified name that must have its
// domain (constraints' attributes).
func ValidateFullyQualifiedName(name resourcev1.FullyQualifiedName, path *field.Path) field.ErrorList {
	errs := ValidateQualifiedName(resourcev1.QualifiedName(name), path)
	if !strings.Contains(string(name), "/") {
		errs = append(errs, field.Invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

func validateCIdentifier(id string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(path, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range content.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(path, id, msg))
	}
	return errs
}

// ValidateList checks each item of a list that may hold at most max items
// (any number when max is negative). A longer list gets one TooMany error
// and its items are not looked at, as upstream guards against large
// input. each may be nil.
func ValidateList[T any](items []T, max int, path *field.Path, each func(T, *field.Path) field.ErrorList) field.ErrorList {
	if max >= 0 && len(items) > max {
		return field.ErrorList{field.TooMany(path, len(items), max)}
	}
	var errs field.ErrorList
	if each != nil {
		for i, item := range items {
			errs = append(errs, each(item, path.Index(i))...)
		}
	}
	return errs
}

// ValidateSet is ValidateList for a list whose items must differ in key:
// after the items' own errors, each repeated key is a Duplicate error at
// the later item.
func ValidateSet[T any, K comparable](items []T, max int, path *field.Path, key func(T) K, each func(T, *field.Path) field.ErrorList) field.ErrorList {
	errs := ValidateList(items, max, path, each)
	if max >= 0 && len(items) > max {
		return errs
	}
	seen := sets.New[K]()
	for i, item := range items {
		k := key(item)
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(path.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}

// Self is the key of a set of strings: the string itself.
func Self(s string) string { return s }
