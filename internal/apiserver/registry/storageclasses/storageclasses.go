// Package storageclasses is the registry entry for storage.k8s.io/v1
// storageclasses.
package storageclasses

import (
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

const (
	maxParametersSize  = 256 * (1 << 10) // bytes of keys and values together
	maxParametersCount = 512

	// DefaultAnnotation marks the default storage class; the beta spelling is
	// still honoured.
	DefaultAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

var (
	reclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	bindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

// Resource returns the storageclasses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   storagev1.SchemeGroupVersion,
		Resource:       "storageclasses",
		Kind:           "StorageClass",
		SingularName:   "storageclass",
		ShortNames:     []string{"sc"},
		New:            func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:        func() runtime.Object { return &storagev1.StorageClassList{} },
		Default:        setDefaults,
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Provisioner", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["provisioner"]},
			{Name: "ReclaimPolicy", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]},
			{Name: "VolumeBindingMode", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]},
			{Name: "AllowVolumeExpansion", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: row,
	}
}

func setDefaults(obj runtime.Object) {
	sc := obj.(*storagev1.StorageClass)
	if sc.ReclaimPolicy == nil {
		policy := corev1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &policy
	}
	if sc.VolumeBindingMode == nil {
		mode := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &mode
	}
}

func validate(obj runtime.Object) field.ErrorList {
	sc := obj.(*storagev1.StorageClass)
	errs := ValidateProvisioner(sc.Provisioner, field.NewPath("provisioner"))
	errs = append(errs, ValidateParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	if sc.ReclaimPolicy != nil && *sc.ReclaimPolicy != "" && !sets.New(reclaimPolicies...).Has(string(*sc.ReclaimPolicy)) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *sc.ReclaimPolicy, reclaimPolicies))
	}
	switch p := field.NewPath("volumeBindingMode"); {
	case sc.VolumeBindingMode == nil:
		errs = append(errs, field.Required(p, ""))
	case !sets.New(bindingModes...).Has(string(*sc.VolumeBindingMode)):
		errs = append(errs, field.NotSupported(p, *sc.VolumeBindingMode, bindingModes))
	}
	return append(errs, validateTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// ValidateProvisioner wants the name of a provisioner (or of the CSI driver
// of a volume attributes class): a qualified name, in any case.
func ValidateProvisioner(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// ValidateParameters checks the parameters of a storage class or of a
// volume attributes class: no empty key, at most 512 of them and 256 KiB
// of keys and values together, and at least one unless allowEmpty.
func ValidateParameters(params map[string]string, allowEmpty bool, p *field.Path) field.ErrorList {
	if len(params) > maxParametersCount {
		return field.ErrorList{field.TooLong(p, "", maxParametersCount)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxParametersSize {
		errs = append(errs, field.TooLong(p, "", maxParametersSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(p, "must contain at least one key/value pair"))
	}
	return errs
}

// validateTopologies checks allowedTopologies: each term's keys are label
// names with at least one value, and no term repeats another.
func validateTopologies(terms []corev1.TopologySelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string]sets.Set[string]
	for i, term := range terms {
		exprs := map[string]sets.Set[string]{}
		exprPath := p.Index(i).Child("matchLabelExpressions")
		for j, req := range term.MatchLabelExpressions {
			reqPath := exprPath.Index(j)
			values := sets.New[string]()
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(reqPath.Child("values"), ""))
			}
			for k, v := range req.Values {
				if values.Has(v) {
					errs = append(errs, field.Duplicate(reqPath.Child("values").Index(k), v))
				}
				values.Insert(v)
			}
			for _, msg := range validation.IsQualifiedName(req.Key) {
				errs = append(errs, field.Invalid(reqPath.Child("key"), req.Key, msg))
			}
			if _, dup := exprs[req.Key]; dup {
				errs = append(errs, field.Duplicate(reqPath.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, other := range seen {
			if reflect.DeepEqual(exprs, other) {
				errs = append(errs, field.Duplicate(exprPath, ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	sc, oldSC := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
	var errs field.ErrorList
	if !reflect.DeepEqual(sc.Parameters, oldSC.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != oldSC.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !reflect.DeepEqual(sc.ReclaimPolicy, oldSC.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, oldSC.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

// IsDefault reports whether a storage class is marked as the default one.
func IsDefault(meta metav1.ObjectMeta) bool {
	return meta.Annotations[DefaultAnnotation] == "true" || meta.Annotations[betaDefaultAnnotation] == "true"
}

func row(obj runtime.Object, now time.Time) []interface{} {
	sc := obj.(*storagev1.StorageClass)
	name := sc.Name
	if IsDefault(sc.ObjectMeta) {
		name += " (default)"
	}
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	binding := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return []interface{}{name, sc.Provisioner, reclaim, binding, expansion, registry.Age(sc.CreationTimestamp, now)}
}
