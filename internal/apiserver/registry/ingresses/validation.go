package ingresses

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	pathTypes            = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

func validate(obj runtime.Object) field.ErrorList {
	ing := obj.(*networkingv1.Ingress)
	errs := validateSpec(&ing.Spec, field.NewPath("spec"))
	if v, ok := ing.Annotations[classAnnotation]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(classAnnotation), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

func validateSpec(spec *networkingv1.IngressSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		errs = append(errs, validateRule(&rule, p.Child("rules").Index(i))...)
	}
	for i, tls := range spec.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			hp := tp.Child("hosts").Index(j)
			check := validation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(host) {
				errs = append(errs, field.Invalid(hp, host, msg))
			}
		}
		if tls.SecretName != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

func validateRule(rule *networkingv1.IngressRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.Host != "" {
		hp := p.Child("host")
		if isIP(rule.Host) {
			errs = append(errs, field.Invalid(hp, rule.Host, "must be a DNS name, not an IP address"))
		}
		check := validation.IsDNS1123Subdomain
		if strings.Contains(rule.Host, "*") {
			check = validation.IsWildcardDNS1123Subdomain
		}
		for _, msg := range check(rule.Host) {
			errs = append(errs, field.Invalid(hp, rule.Host, msg))
		}
	}
	if rule.HTTP == nil {
		return errs
	}
	hp := p.Child("http")
	if len(rule.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(hp.Child("paths"), ""))
	}
	for i := range rule.HTTP.Paths {
		errs = append(errs, validatePath(&rule.HTTP.Paths[i], hp.Child("paths").Index(i))...)
	}
	return errs
}

func validatePath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, pathTypes))
	}
	return append(errs, validateBackend(&path.Backend, p.Child("backend"))...)
}

func validateBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return validateResourceRef(b.Resource, p.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(p, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	svc := b.Service
	if svc.Name == "" {
		errs = append(errs, field.Required(p.Child("service", "name"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNS1035Label(svc.Name, false) {
			errs = append(errs, field.Invalid(p.Child("service", "name"), svc.Name, msg))
		}
	}
	portPath := p.Child("service", "port")
	switch {
	case svc.Port.Name != "" && svc.Port.Number != 0:
		errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
	case svc.Port.Name != "":
		for _, msg := range validation.IsValidPortName(svc.Port.Name) {
			errs = append(errs, field.Invalid(portPath.Child("name"), svc.Port.Name, msg))
		}
	case svc.Port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(svc.Port.Number)) {
			errs = append(errs, field.Invalid(portPath.Child("number"), svc.Port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(p, "port name or number is required"))
	}
	return errs
}

// validateResourceRef checks a typed reference to another object.
func validateResourceRef(ref *corev1.TypedLocalObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*ref.APIGroup) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), *ref.APIGroup, msg))
		}
	}
	errs = append(errs, requiredSegment(ref.Kind, p.Child("kind"), "kind is required")...)
	return append(errs, requiredSegment(ref.Name, p.Child("name"), "name is required")...)
}

func requiredSegment(value string, p *field.Path, missing string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(p, missing)}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}
