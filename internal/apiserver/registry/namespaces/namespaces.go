// Package namespaces is the registry entry for core/v1 namespaces.
//
// A new namespace is Active and carries the "kubernetes" finalizer, which the
// namespace controller removes (through the finalize subresource) once the
// namespace's content is gone. Every namespace is labelled
// kubernetes.io/metadata.name=<name>.
package namespaces

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the namespaces entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "namespaces",
		Kind:             "Namespace",
		SingularName:     "namespace",
		Namespaced:       false,
		ShortNames:       []string{"ns"},
		New:              func() runtime.Object { return &corev1.Namespace{} },
		NewList:          func() runtime.Object { return &corev1.NamespaceList{} },
		HasStatus:        true,
		Default:          func(obj runtime.Object) { Default(obj.(*corev1.Namespace)) },
		PrepareForCreate: func(obj runtime.Object) { prepareForCreate(obj.(*corev1.Namespace)) },
		PrepareForUpdate: func(obj, old runtime.Object) { prepareForUpdate(obj.(*corev1.Namespace), old.(*corev1.Namespace)) },
		Validate:         func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Namespace)) },
		NameValidation:   registry.NameLabel,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Status", Type: "string", Description: "The status of the namespace"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			ns := obj.(*corev1.Namespace)
			return []interface{}{ns.Name, string(ns.Status.Phase), registry.Age(ns.CreationTimestamp, now)}
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			ns := obj.(*corev1.Namespace)
			return fields.Set{"status.phase": string(ns.Status.Phase), "name": ns.Name}
		},
	}
}

// Default sets the phase to Active when unset and the name label.
func Default(ns *corev1.Namespace) {
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	setNameLabel(ns)
}

func setNameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return // generateName: the name is not known yet
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func prepareForCreate(ns *corev1.Namespace) {
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	hasKubernetes := false
	for _, f := range ns.Spec.Finalizers {
		hasKubernetes = hasKubernetes || f == corev1.FinalizerKubernetes
	}
	if !hasKubernetes {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNameLabel(ns)
}

// prepareForUpdate keeps the spec: spec.finalizers only changes through the
// finalize subresource.
func prepareForUpdate(ns, old *corev1.Namespace) {
	ns.Spec = old.Spec
	setNameLabel(ns)
}

func validate(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizer(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// validateFinalizer accepts a qualified name; one without a domain must be
// the standard "kubernetes" finalizer.
func validateFinalizer(name string, path *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, path)
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(name, "/") && name != string(corev1.FinalizerKubernetes) {
		errs = append(errs, field.Invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}
