package endpointslices

import (
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	maxTopologyLabels = 16
	maxAddresses      = 100
	maxPorts          = 20000
	maxEndpoints      = 1000
	maxHints          = 8
)

var (
	addressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}
	protocols    = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
)

func validate(obj runtime.Object) field.ErrorList {
	s := obj.(*discoveryv1.EndpointSlice)
	var errs field.ErrorList
	p := field.NewPath("addressType")
	switch s.AddressType {
	case "":
		errs = append(errs, field.Required(p, ""))
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(p, s.AddressType, addressTypes))
	}
	errs = append(errs, validateEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	return append(errs, validatePorts(s.Ports, field.NewPath("ports"))...)
}

func validateEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, p *field.Path) field.ErrorList {
	if len(endpoints) > maxEndpoints {
		return field.ErrorList{field.TooMany(p, len(endpoints), maxEndpoints)}
	}
	var errs field.ErrorList
	for i, e := range endpoints {
		ep := p.Index(i)
		ap := ep.Child("addresses")
		switch {
		case len(e.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(e.Addresses) > maxAddresses:
			errs = append(errs, field.TooMany(ap, len(e.Addresses), maxAddresses))
		}
		for j, a := range e.Addresses {
			switch addrType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				errs = append(errs, validateIP(a, addrType, ap.Index(j))...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(ap.Index(j), a)...)
			}
		}
		if e.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*e.NodeName, false) {
				errs = append(errs, field.Invalid(ep.Child("nodeName"), *e.NodeName, msg))
			}
		}
		tp := ep.Child("deprecatedTopology")
		if len(e.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(tp, len(e.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(e.DeprecatedTopology, tp)...)
		if e.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*e.Hostname) {
				errs = append(errs, field.Invalid(ep.Child("hostname"), *e.Hostname, msg))
			}
		}
		if e.Hints != nil {
			errs = append(errs, validateHints(e.Hints, ep.Child("hints"))...)
		}
	}
	return errs
}

// validateIP checks an address of an IPv4 or IPv6 slice: of the slice's
// family, and not an address no endpoint can have.
func validateIP(addr string, addrType discoveryv1.AddressType, p *field.Path) field.ErrorList {
	ip := net.ParseIP(addr)
	if ip == nil {
		return field.ErrorList{field.Invalid(p, addr, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if isV4 := ip.To4() != nil; isV4 != (addrType == discoveryv1.AddressTypeIPv4) {
		family := "IPv4"
		if addrType == discoveryv1.AddressTypeIPv6 {
			family = "IPv6"
		}
		errs = append(errs, field.Invalid(p, addr, "must be a valid "+family+" address"))
	}
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validatePorts(ports []discoveryv1.EndpointPort, p *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(p, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(pp.Child("name"), name, msg))
			}
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(pp.Child("name"), name))
		}
		names.Insert(name)
		switch {
		case port.Protocol == nil:
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		case !sets.New(protocols...).Has(string(*port.Protocol)):
			errs = append(errs, field.NotSupported(pp.Child("protocol"), *port.Protocol, protocols))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	zp := p.Child("forZones")
	if len(h.ForZones) > maxHints {
		return field.ErrorList{field.TooMany(zp, len(h.ForZones), maxHints)}
	}
	zones := sets.New[string]()
	for i, z := range h.ForZones {
		np := zp.Index(i).Child("name")
		if zones.Has(z.Name) {
			errs = append(errs, field.Duplicate(np, z.Name))
		}
		zones.Insert(z.Name)
		for _, msg := range validation.IsValidLabelValue(z.Name) {
			errs = append(errs, field.Invalid(np, z.Name, msg))
		}
	}
	fp := p.Child("forNodes")
	if len(h.ForNodes) > maxHints {
		return append(errs, field.TooMany(fp, len(h.ForNodes), maxHints))
	}
	nodes := sets.New[string]()
	for i, n := range h.ForNodes {
		np := fp.Index(i).Child("name")
		if nodes.Has(n.Name) {
			errs = append(errs, field.Duplicate(np, n.Name))
		}
		nodes.Insert(n.Name)
		for _, msg := range apivalidation.NameIsDNSSubdomain(n.Name, false) {
			errs = append(errs, field.Invalid(np, n.Name, msg))
		}
	}
	return errs
}
