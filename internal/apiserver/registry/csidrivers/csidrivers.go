// Package csidrivers is the registry entry for storage.k8s.io/v1 csidrivers.
package csidrivers

import (
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

const minTokenExpirationSeconds = 10 * 60

var fsGroupPolicies = []string{
	string(storagev1.FileFSGroupPolicy),
	string(storagev1.NoneFSGroupPolicy),
	string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy),
}

// Resource returns the csidrivers entry.
func Resource() registry.Resource {
	spec := storagev1.CSIDriverSpec{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion:   storagev1.SchemeGroupVersion,
		Resource:       "csidrivers",
		Kind:           "CSIDriver",
		SingularName:   "csidriver",
		New:            func() runtime.Object { return &storagev1.CSIDriver{} },
		NewList:        func() runtime.Object { return &storagev1.CSIDriverList{} },
		Default:        setDefaults,
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "AttachRequired", Type: "boolean", Description: spec["attachRequired"]},
			{Name: "PodInfoOnMount", Type: "boolean", Description: spec["podInfoOnMount"]},
			{Name: "StorageCapacity", Type: "boolean", Description: spec["storageCapacity"]},
			{Name: "TokenRequests", Type: "string", Description: spec["tokenRequests"]},
			{Name: "RequiresRepublish", Type: "boolean", Description: spec["requiresRepublish"]},
			{Name: "Modes", Type: "string", Description: spec["volumeLifecycleModes"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: row,
	}
}

func setDefaults(obj runtime.Object) {
	spec := &obj.(*storagev1.CSIDriver).Spec
	setBool := func(b **bool, v bool) {
		if *b == nil {
			*b = &v
		}
	}
	setBool(&spec.AttachRequired, true)
	setBool(&spec.PodInfoOnMount, false)
	setBool(&spec.StorageCapacity, false)
	setBool(&spec.RequiresRepublish, false)
	setBool(&spec.SELinuxMount, false)
	if spec.FSGroupPolicy == nil {
		policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		spec.FSGroupPolicy = &policy
	}
	if len(spec.VolumeLifecycleModes) == 0 {
		spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*storagev1.CSIDriver).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	required := func(b *bool, name string) {
		if b == nil {
			errs = append(errs, field.Required(p.Child(name), ""))
		}
	}
	required(spec.AttachRequired, "attachedRequired")
	required(spec.PodInfoOnMount, "podInfoOnMount")
	required(spec.StorageCapacity, "storageCapacity")
	required(spec.SELinuxMount, "seLinuxMount")
	if spec.FSGroupPolicy != nil && !contains(fsGroupPolicies, string(*spec.FSGroupPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), *spec.FSGroupPolicy, fsGroupPolicies))
	}
	errs = append(errs, validateTokenRequests(spec.TokenRequests, p.Child("tokenRequests"))...)
	for _, mode := range spec.VolumeLifecycleModes {
		if mode != storagev1.VolumeLifecyclePersistent && mode != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), mode,
				[]string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	if s := spec.NodeAllocatableUpdatePeriodSeconds; s != nil && *s < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *s, "must be greater than or equal to 10 seconds"))
	}
	return errs
}

func validateTokenRequests(requests []storagev1.TokenRequest, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	audiences := map[string]bool{}
	for i, r := range requests {
		rp := p.Index(i)
		if audiences[r.Audience] {
			errs = append(errs, field.Duplicate(rp.Child("audience"), r.Audience))
			continue
		}
		audiences[r.Audience] = true
		if r.ExpirationSeconds == nil {
			continue
		}
		if *r.ExpirationSeconds < minTokenExpirationSeconds {
			errs = append(errs, field.Invalid(rp.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *r.ExpirationSeconds > 1<<32 {
			errs = append(errs, field.Invalid(rp.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	spec, oldSpec := obj.(*storagev1.CSIDriver).Spec, old.(*storagev1.CSIDriver).Spec
	p := field.NewPath("spec")
	errs := apivalidation.ValidateImmutableField(spec.AttachRequired, oldSpec.AttachRequired, p.Child("attachedRequired"))
	return append(errs, apivalidation.ValidateImmutableField(spec.VolumeLifecycleModes, oldSpec.VolumeLifecycleModes, p.Child("volumeLifecycleModes"))...)
}

func row(obj runtime.Object, now time.Time) []interface{} {
	d := obj.(*storagev1.CSIDriver)
	boolOr := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	tokens := "<unset>"
	if d.Spec.TokenRequests != nil {
		var audiences []string
		for _, t := range d.Spec.TokenRequests {
			audiences = append(audiences, t.Audience)
		}
		tokens = strings.Join(audiences, ",")
	}
	var modes []string
	for _, m := range d.Spec.VolumeLifecycleModes {
		modes = append(modes, string(m))
	}
	modeCell := strings.Join(modes, ",")
	if modeCell == "" {
		modeCell = "<none>"
	}
	return []interface{}{
		d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
		tokens, boolOr(d.Spec.RequiresRepublish, false), modeCell, registry.Age(d.CreationTimestamp, now),
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
