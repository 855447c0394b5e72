// Package resourceclaimtemplates is the registry entry for
// resource.k8s.io/v1 resourceclaimtemplates, with upstream's defaults,
// validation (the spec is immutable) and table. Making claims from
// templates for pods is a controller's work; upstream's check that admin
// access is only asked for in namespaces labelled for it is not done.
package resourceclaimtemplates

import (
	"reflect"
	"time"
	"unicode"
	"unicode/utf8"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/drautil"
)

// Resource returns the resourceclaimtemplates entry. As upstream, an
// update is checked whole again, and its spec may not change.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     resourcev1.SchemeGroupVersion,
		Resource:         "resourceclaimtemplates",
		Kind:             "ResourceClaimTemplate",
		SingularName:     "resourceclaimtemplate",
		Namespaced:       true,
		New:              func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
		NewList:          func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
		Default:          func(obj runtime.Object) { drautil.DefaultClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec) },
		PrepareForCreate: dropDisabledFields,
		PrepareForUpdate: func(obj, _ runtime.Object) { dropDisabledFields(obj) },
		Validate:         validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			t, oldT := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
			return apivalidation.ValidateImmutableField(t.Spec, oldT.Spec, field.NewPath("spec"))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			t := obj.(*resourcev1.ResourceClaimTemplate)
			return []interface{}{t.Name, registry.Age(t.CreationTimestamp, now)}
		},
	}
}

func dropDisabledFields(obj runtime.Object) {
	drautil.DropDisabledClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

// validate checks the metadata of the claims to make (labels and
// annotations only) and their spec.
func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*resourcev1.ResourceClaimTemplate).Spec
	p := field.NewPath("spec")
	errs := validateTemplateMeta(&spec.ObjectMeta, p.Child("metadata"))
	return append(errs, drautil.ValidateClaimSpec(&spec.Spec, p.Child("spec"))...)
}

// templateMetaFields are the metadata fields a template may set.
var templateMetaFields = map[string]bool{"Labels": true, "Annotations": true}

// validateTemplateMeta checks labels and annotations and forbids every
// other metadata field, as upstream does for templates.
func validateTemplateMeta(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	v := reflect.ValueOf(*m)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if templateMetaFields[f.Name] || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(p.Child(string(unicode.ToLower(r))+f.Name[n:]), "cannot be set"))
	}
	return errs
}
