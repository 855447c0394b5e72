// Package endpoints is the registry entry for core/v1 endpoints.
package endpoints

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

var supportedProtocols = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}

// Resource returns the endpoints entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "endpoints",
		Kind:         "Endpoints",
		SingularName: "endpoints",
		Namespaced:   true,
		ShortNames:   []string{"ep"},
		New:          func() runtime.Object { return &corev1.Endpoints{} },
		NewList:      func() runtime.Object { return &corev1.EndpointsList{} },
		Default:      func(obj runtime.Object) { Default(obj.(*corev1.Endpoints)) },
		Validate:     func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Endpoints)) },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			ep := obj.(*corev1.Endpoints)
			return []interface{}{ep.Name, formatEndpoints(ep), registry.Age(ep.CreationTimestamp, now)}
		},
	}
}

// Default sets the protocol of every port to TCP when unset.
func Default(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if p := &ep.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func validate(ep *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, validateAddress(a, p.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateAddress(a, p.Child("notReadyAddresses").Index(j))...)
		}
		for j, port := range ss.Ports {
			errs = append(errs, validatePort(port, len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateAddress(a corev1.EndpointAddress, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipPath := p.Child("ip")
	addr, err := netip.ParseAddr(a.IP)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(ipPath, a.IP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
	case addr.IsUnspecified():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be unspecified (0.0.0.0)"))
	case addr.IsLoopback():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	case addr.IsLinkLocalUnicast():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	case addr.IsLinkLocalMulticast():
		errs = append(errs, field.Invalid(ipPath, a.IP, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	if a.Hostname != "" {
		for _, msg := range content.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(p.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range content.IsDNS1123Subdomain(*a.NodeName) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return errs
}

func validatePort(port corev1.EndpointPort, requireName bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if port.Name != "" {
		for _, msg := range content.IsDNS1123Label(port.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
		}
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(p.Child("port"), port.Port, msg))
	}
	switch {
	case port.Protocol == "":
		errs = append(errs, field.Required(p.Child("protocol"), ""))
	case !slices.Contains(supportedProtocols, string(port.Protocol)):
		errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedProtocols))
	}
	if port.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
			errs = append(errs, field.Invalid(p.Child("appProtocol"), *port.AppProtocol, msg))
		}
	}
	return errs
}

// formatEndpoints lists up to three ready ip:port pairs, then "+ N more...".
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	add := func(s string) {
		count++
		if len(list) < max {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			// Headless services may have addresses without ports.
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, port := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if count > max {
		out = fmt.Sprintf("%s + %d more...", out, count-max)
	}
	return out
}
