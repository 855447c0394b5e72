// Package storageversionmigrations is the registry entry for
// storagemigration.k8s.io/v1 storageversionmigrations and their status
// subresource, with upstream's validation (a resource to migrate that never
// changes; on /status, valid conditions, a resource version that stays once
// set, and a migration that, once succeeded or failed, stays so) and
// table. Migrating anything (upstream's controller) is not done here.
package storageversionmigrations

import (
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the storageversionmigrations entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: svmv1.SchemeGroupVersion,
		Resource:     "storageversionmigrations",
		Kind:         "StorageVersionMigration",
		SingularName: "storageversionmigration",
		New:          func() runtime.Object { return &svmv1.StorageVersionMigration{} },
		NewList:      func() runtime.Object { return &svmv1.StorageVersionMigrationList{} },
		HasStatus:    true,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*svmv1.StorageVersionMigration).Status = svmv1.StorageVersionMigrationStatus{}
		},
		Validate: validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			spec, oldSpec := obj.(*svmv1.StorageVersionMigration).Spec, old.(*svmv1.StorageVersionMigration).Spec
			return apivalidation.ValidateImmutableField(spec, oldSpec, field.NewPath("spec"))
		},
		ValidateStatusUpdate: validateStatusUpdate,
		Columns:              columns,
		Row:                  row,
	}
}

// columns are upstream's, whose Name column has no "name" format.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Resource", Type: "string", Description: "GroupResource to migrate"},
	{Name: "Status", Type: "string", Description: "Status of the migration"},
}

// validate wants a resource that is a DNS-1035 label and a group, if any,
// that is a DNS-1123 subdomain, as for an APIService.
func validate(obj runtime.Object) field.ErrorList {
	gr := obj.(*svmv1.StorageVersionMigration).Spec.Resource
	p := field.NewPath("spec", "resource")
	var errs field.ErrorList
	if gr.Resource == "" {
		errs = append(errs, field.Required(p.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(gr.Resource); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("resource"), gr.Resource, strings.Join(msgs, ",")))
	}
	if gr.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(gr.Group); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("group"), gr.Group, strings.Join(msgs, ",")))
		}
	}
	return errs
}

// validateStatusUpdate is upstream's check of a write through /status.
func validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	status, oldStatus := obj.(*svmv1.StorageVersionMigration).Status, old.(*svmv1.StorageVersionMigration).Status
	p := field.NewPath("status")
	var errs field.ErrorList
	if rv := status.ResourceVersion; rv != "" {
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, err.Error()))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(status.Conditions, p.Child("conditions"))...)
	if oldStatus.ResourceVersion != "" && oldStatus.ResourceVersion != status.ResourceVersion {
		errs = append(errs, field.Invalid(p.Child("resourceVersion"), status.ResourceVersion, apivalidation.FieldImmutableErrorMsg))
	}
	succeeded, failed := isTrue(status, svmv1.MigrationSucceeded), isTrue(status, svmv1.MigrationFailed)
	conditions := p.Child("conditions")
	if succeeded && failed {
		errs = append(errs, field.Invalid(conditions, status.Conditions, "Both success and failed conditions cannot be true at the same time"))
	}
	if isTrue(oldStatus, svmv1.MigrationSucceeded) && !succeeded {
		errs = append(errs, field.Invalid(conditions, status.Conditions, "Success condition cannot be set to false once it is true"))
	}
	if isTrue(oldStatus, svmv1.MigrationFailed) && !failed {
		errs = append(errs, field.Invalid(conditions, status.Conditions, "Failed condition cannot be set to false once it is true"))
	}
	return errs
}

func isTrue(status svmv1.StorageVersionMigrationStatus, cond svmv1.MigrationConditionType) bool {
	return meta.IsStatusConditionTrue(status.Conditions, string(cond))
}

// row gives the resource as resource.group and the type of the last
// condition among Running, Succeeded and Failed that is true ("Unknown"
// without one).
func row(obj runtime.Object, _ time.Time) []interface{} {
	svm := obj.(*svmv1.StorageVersionMigration)
	status := "Unknown"
	for _, c := range svm.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch svmv1.MigrationConditionType(c.Type) {
		case svmv1.MigrationRunning, svmv1.MigrationSucceeded, svmv1.MigrationFailed:
			status = c.Type
		}
	}
	return []interface{}{svm.Name, svm.Spec.Resource.String(), status}
}
