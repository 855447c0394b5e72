// Package endpointslices is the registry entry for discovery.k8s.io/v1
// endpointslices.
package endpointslices

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the endpointslices entry.
func Resource() registry.Resource {
	slice := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion: discoveryv1.SchemeGroupVersion,
		Resource:     "endpointslices",
		Kind:         "EndpointSlice",
		SingularName: "endpointslice",
		Namespaced:   true,
		New:          func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:      func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Default:      setDefaults,
		Validate:     validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			s, oldS := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
			return apivalidation.ValidateImmutableField(s.AddressType, oldS.AddressType, field.NewPath("addressType"))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "AddressType", Type: "string", Description: slice["addressType"]},
			{Name: "Ports", Type: "string", Description: slice["ports"]},
			{Name: "Endpoints", Type: "string", Description: slice["endpoints"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			s := obj.(*discoveryv1.EndpointSlice)
			return []interface{}{s.Name, string(s.AddressType), portsCell(s.Ports), endpointsCell(s.Endpoints), registry.Age(s.CreationTimestamp, now)}
		},
	}
}

// setDefaults gives every port a name ("") and a protocol (TCP).
func setDefaults(obj runtime.Object) {
	s := obj.(*discoveryv1.EndpointSlice)
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

// portsCell lists up to three ports by number (or name, or "*").
func portsCell(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		if len(list) == 3 {
			break
		}
		switch {
		case p.Port != nil:
			list = append(list, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			list = append(list, *p.Name)
		default:
			list = append(list, "*")
		}
	}
	return withMore(list, len(ports))
}

// endpointsCell lists up to three addresses across all endpoints.
func endpointsCell(endpoints []discoveryv1.Endpoint) string {
	var list []string
	count := 0
	for _, e := range endpoints {
		for _, a := range e.Addresses {
			if len(list) < 3 {
				list = append(list, a)
			}
			count++
		}
	}
	return withMore(list, count)
}

func withMore(list []string, count int) string {
	out := strings.Join(list, ",")
	if count > len(list) {
		return fmt.Sprintf("%s + %d more...", out, count-len(list))
	}
	if out == "" {
		return "<unset>"
	}
	return out
}
