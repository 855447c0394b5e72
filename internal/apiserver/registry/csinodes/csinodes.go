// Package csinodes is the registry entry for storage.k8s.io/v1 csinodes.
package csinodes

import (
	"fmt"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// maxNodeIDLength is the longest nodeID a driver may report.
const maxNodeIDLength = 256

// Resource returns the csinodes entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   storagev1.SchemeGroupVersion,
		Resource:       "csinodes",
		Kind:           "CSINode",
		SingularName:   "csinode",
		New:            func() runtime.Object { return &storagev1.CSINode{} },
		NewList:        func() runtime.Object { return &storagev1.CSINodeList{} },
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			n := obj.(*storagev1.CSINode)
			return []interface{}{n.Name, int64(len(n.Spec.Drivers)), registry.Age(n.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	n := obj.(*storagev1.CSINode)
	p := field.NewPath("spec", "drivers")
	var errs field.ErrorList
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		dp := p.Index(i)
		errs = append(errs, ValidateDriverName(d.Name, dp.Child("name"))...)
		switch {
		case d.NodeID == "":
			errs = append(errs, field.Required(dp.Child("nodeID"), ""))
		case len(d.NodeID) > maxNodeIDLength:
			errs = append(errs, field.Invalid(dp.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", maxNodeIDLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count < 0 {
			errs = append(errs, field.Invalid(dp.Child("allocatable", "count"), *d.Allocatable.Count, "must be greater than or equal to 0"))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, key := range d.TopologyKeys {
			if key == "" {
				errs = append(errs, field.Required(dp, key))
			}
			if keys.Has(key) {
				errs = append(errs, field.Duplicate(dp, key))
			}
			keys.Insert(key)
			for _, msg := range validation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(dp, key, msg))
			}
		}
	}
	return errs
}

// validateUpdate keeps registered drivers as they were; only their
// allocatable count may change.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	n, oldN := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
	var errs field.ErrorList
	for _, oldD := range oldN.Spec.Drivers {
		for _, d := range n.Spec.Drivers {
			if d.Name != oldD.Name {
				continue
			}
			a, b := d.DeepCopy(), oldD.DeepCopy()
			a.Allocatable, b.Allocatable = nil, nil
			if !apiequality.Semantic.DeepEqual(a, b) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "drivers"), d, "field is immutable"))
			}
		}
	}
	return errs
}

// ValidateDriverName checks the name of a CSI driver: at most 63 characters
// and, ignoring case, a DNS-1123 subdomain.
func ValidateDriverName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, name, 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}
