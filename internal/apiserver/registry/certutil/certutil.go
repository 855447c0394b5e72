// Package certutil holds what the certificates.k8s.io/v1 registry entries
// share: upstream's check of a signer name ("example.com/signer-name").
package certutil

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDomainLength and maxPathLength bound the two halves of a signer name:
// a DNS subdomain, then a "<namespace>.<name>" path (label, dot, subdomain).
const (
	maxDomainLength = validation.DNS1123SubdomainMaxLength
	maxPathLength   = validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1
	maxSignerLength = maxDomainLength + maxPathLength + 1
)

// ValidateSignerName checks that name, at path, is a signer name: a
// domain of at least two DNS labels, one "/", then DNS subdomains joined
// by dots. It reports only the first bad label of each half, as upstream.
func ValidateSignerName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	domain, rest, found := strings.Cut(name, "/")
	if !found || strings.Contains(rest, "/") {
		return field.ErrorList{field.Invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(domain) > maxDomainLength {
		errs = append(errs, field.TooLong(path, "", maxDomainLength))
	}
	labels := strings.Split(domain, ".")
	errs = append(errs, firstBadLabel(path, domain, labels, validation.IsDNS1123Label)...)
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(path, domain, "should be a domain with at least two segments separated by dots"))
	}
	errs = append(errs, firstBadLabel(path, rest, strings.Split(rest, "."), validation.IsDNS1123Subdomain)...)
	if len(name) > maxSignerLength {
		errs = append(errs, field.TooLong(path, "", maxSignerLength))
	}
	return errs
}

// firstBadLabel reports what check finds wrong with the first of labels
// (the parts of segment) that fails it; later ones would say the same.
func firstBadLabel(path *field.Path, segment string, labels []string, check func(string) []string) field.ErrorList {
	for _, label := range labels {
		msgs := check(label)
		if len(msgs) == 0 {
			continue
		}
		errs := make(field.ErrorList, 0, len(msgs))
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(path, segment, fmt.Sprintf("validating label %q: %s", label, msg)))
		}
		return errs
	}
	return nil
}
