package apiserver

import (
	"fmt"
	"math/rand/v2"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// prepareCreateMeta fills in the metadata the server owns on create.
func prepareCreateMeta(rs *resourceStore, accessor metav1.Object, now metav1.Time) {
	if accessor.GetName() == "" && accessor.GetGenerateName() != "" {
		accessor.SetName(newName(rs.res.NameValidation, accessor.GetGenerateName()))
	}
	accessor.SetUID(uuid.NewUUID())
	accessor.SetCreationTimestamp(now)
	accessor.SetDeletionTimestamp(nil)
	accessor.SetDeletionGracePeriodSeconds(nil)
	accessor.SetSelfLink("")
	accessor.SetGeneration(0)
	if rs.res.HasStatus {
		accessor.SetGeneration(1)
	}
	if !rs.res.Namespaced {
		accessor.SetNamespace("")
	}
}

// keepServerMeta copies onto an updated object the metadata clients cannot change.
func keepServerMeta(accessor, old metav1.Object) {
	accessor.SetUID(old.GetUID())
	accessor.SetCreationTimestamp(old.GetCreationTimestamp())
	accessor.SetDeletionTimestamp(old.GetDeletionTimestamp())
	accessor.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	accessor.SetGeneration(old.GetGeneration())
	accessor.SetSelfLink("")
	if accessor.GetGenerateName() == "" {
		accessor.SetGenerateName(old.GetGenerateName())
	}
}

const nameChars = "bcdfghjklmnpqrstvwxz2456789"

func generateName(base string) string {
	if len(base) > 58 {
		base = base[:58]
	}
	b := make([]byte, 5)
	for i := range b {
		b[i] = nameChars[rand.IntN(len(nameChars))]
	}
	return base + string(b)
}

// newName is the name of an object created with only a generateName: the
// base and a random suffix, or the base alone where the name is an IP
// address.
func newName(rule registry.NameRule, base string) string {
	if rule == registry.NameIP {
		return base
	}
	return generateName(base)
}

func nameValidator(rule registry.NameRule) apivalidation.ValidateNameFunc {
	switch rule {
	case registry.NameIP:
		return registry.IPName
	case registry.NameLabel:
		return apivalidation.NameIsDNSLabel
	case registry.NameLabel1035:
		return apivalidation.NameIsDNS1035Label
	case registry.NamePathSegment:
		return func(name string, prefix bool) []string { return path.IsValidPathSegmentName(name) }
	}
	return apivalidation.NameIsDNSSubdomain
}

// validateObject runs generic metadata validation and the resource's own.
// On create (old nil) ValidateCreate runs too. Update checks (immutable
// fields) run when old is set, except for the server's own updates
// (subresource internalUpdate: binding, finalize change what clients may
// not); a spec subresource (pods/ephemeralcontainers) or another
// registry.Subresource has its own.
func validateObject(rs *resourceStore, obj, old runtime.Object, subresource string) field.ErrorList {
	accessor, _ := meta.Accessor(obj)
	errs := apivalidation.ValidateObjectMetaAccessor(accessor, rs.res.Namespaced, nameValidator(rs.res.NameValidation), field.NewPath("metadata"))
	if old != nil {
		oldAccessor, _ := meta.Accessor(old)
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(accessor, oldAccessor, field.NewPath("metadata"))...)
	}
	if subresource == "status" && old != nil && rs.res.ValidateStatusUpdate != nil {
		return append(errs, rs.res.ValidateStatusUpdate(obj, old)...)
	}
	if rs.res.Validate != nil {
		errs = append(errs, rs.res.Validate(obj)...)
	}
	validateUpdate := rs.res.ValidateUpdate
	if sub, ok := rs.res.SpecSubresources[subresource]; ok {
		validateUpdate = sub.ValidateUpdate
	}
	if sub, ok := rs.res.Subresources[subresource]; ok {
		validateUpdate = sub.ValidateUpdate
	}
	switch {
	case old == nil && rs.res.ValidateCreate != nil:
		errs = append(errs, rs.res.ValidateCreate(obj)...)
	case old != nil && subresource != internalUpdate && validateUpdate != nil:
		errs = append(errs, validateUpdate(obj, old)...)
	}
	return errs
}

// specChanged is true when anything but metadata and status differs.
func specChanged(obj, old runtime.Object) bool {
	a, b := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	for i := 0; i < a.NumField(); i++ {
		switch a.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !apiequality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return true
		}
	}
	return false
}

// copyField sets dst.NAME = src.NAME for two objects of the same type.
func copyField(dst, src runtime.Object, name string) {
	d := reflect.ValueOf(dst).Elem().FieldByName(name)
	s := reflect.ValueOf(src).Elem().FieldByName(name)
	if d.IsValid() && s.IsValid() && d.CanSet() {
		d.Set(s)
	}
}

// copyAllBut sets every field of dst except metadata and the named one from src.
func copyAllBut(dst, src runtime.Object, keep string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := 0; i < d.NumField(); i++ {
		switch d.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", keep:
			continue
		}
		d.Field(i).Set(s.Field(i))
	}
}

func mustAccessor(obj runtime.Object) metav1.Object {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return accessor
}
