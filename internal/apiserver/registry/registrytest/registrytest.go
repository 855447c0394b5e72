// Package registrytest has helpers for the tests of registry entries: a
// compact form of validation errors to compare against, the steps the
// handlers run on a create and an update, and a check that a table row fits
// its columns.
package registrytest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/registry"
)

// Errors renders errs as "Type field" strings, e.g. "FieldValueRequired spec.selector".
func Errors(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

// ExpectErrors fails t unless errs are exactly want (in "Type field" form, in order).
func ExpectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := Errors(errs)
	if want == nil {
		want = []string{}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got  %q\n want %q\n full: %v", got, want, errs)
	}
}

// ExpectDetail fails t unless some error in errs has the given field and a
// detail containing text.
func ExpectDetail(t *testing.T, errs field.ErrorList, fieldPath, text string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == fieldPath && strings.Contains(e.Detail, text) {
			return
		}
	}
	t.Errorf("no error on %s containing %q in %v", fieldPath, text, errs)
}

// Want is one expected validation error: its type and field
// ("FieldValueInvalid spec.rules[0]"), then a part of its detail.
type Want [2]string

// ExpectWant fails t unless errs are exactly want, in order: each error of
// the given type and field, with a detail that contains the wanted part.
func ExpectWant(t *testing.T, errs field.ErrorList, want ...Want) {
	t.Helper()
	var typesAndFields []string
	for _, w := range want {
		typesAndFields = append(typesAndFields, w[0])
	}
	ExpectErrors(t, errs, typesAndFields...)
	if len(errs) != len(want) {
		return
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Detail, w[1]) {
			t.Errorf("%s: detail %q does not contain %q", w[0], errs[i].Detail, w[1])
		}
	}
}

// Validate runs a resource's Validate, and ValidateUpdate when old is not nil,
// after Default as the handlers do.
func Validate(r registry.Resource, obj, old runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	var errs field.ErrorList
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if old != nil && r.ValidateUpdate != nil {
		errs = append(errs, r.ValidateUpdate(obj, old)...)
	}
	return errs
}

// Create runs what the handlers run on a create after metadata: Default,
// PrepareForCreate, PrepareForCreateWithUser (with no user), Validate and
// ValidateCreate.
func Create(r registry.Resource, obj runtime.Object) field.ErrorList {
	return CreateAs(r, obj, authz.User{})
}

// CreateAs is Create of a request that user makes.
func CreateAs(r registry.Resource, obj runtime.Object, user authz.User) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForCreate != nil {
		r.PrepareForCreate(obj)
	}
	if r.PrepareForCreateWithUser != nil {
		r.PrepareForCreateWithUser(obj, user)
	}
	var errs field.ErrorList
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if r.ValidateCreate != nil {
		errs = append(errs, r.ValidateCreate(obj)...)
	}
	return errs
}

// Update runs what the handlers run on a write of obj over old to the main
// resource after metadata (the caller keeps the stored status where the
// resource has one): Default, PrepareForUpdate, Validate and ValidateUpdate.
func Update(r registry.Resource, obj, old runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForUpdate != nil {
		r.PrepareForUpdate(obj, old)
	}
	var errs field.ErrorList
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if r.ValidateUpdate != nil {
		errs = append(errs, r.ValidateUpdate(obj, old)...)
	}
	return errs
}

// UpdateSubresource runs what the handlers run on a write of obj over old
// through the resource's registry.Subresource name after metadata:
// Default, its PrepareForUpdate, Validate and its ValidateUpdate. It fails
// t when the resource has no such subresource.
func UpdateSubresource(t *testing.T, r registry.Resource, name string, obj, old runtime.Object) field.ErrorList {
	t.Helper()
	sub, ok := r.Subresources[name]
	if !ok {
		t.Fatalf("%s has no subresource %q", r.Resource, name)
	}
	if r.Default != nil {
		r.Default(obj)
	}
	sub.PrepareForUpdate(obj, old)
	var errs field.ErrorList
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	if sub.ValidateUpdate != nil {
		errs = append(errs, sub.ValidateUpdate(obj, old)...)
	}
	return errs
}

// CheckTable fails t unless the resource has a name column first (or, as
// for events, somewhere) and row has one cell per column.
func CheckTable(t *testing.T, r registry.Resource, row []interface{}) {
	t.Helper()
	if len(row) != len(r.Columns) {
		t.Fatalf("row has %d cells for %d columns: %v", len(row), len(r.Columns), row)
	}
	named := false
	for _, c := range r.Columns {
		named = named || c.Format == "name"
		if c.Description == "" {
			t.Errorf("column %q has no description", c.Name)
		}
	}
	if !named {
		t.Errorf("no column has format name")
	}
}
