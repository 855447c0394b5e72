package storageversionmigrations

import (
	"reflect"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

// migration is the conformance test's object: a migration of core "foo".
func migration(group, resource string) *svmv1.StorageVersionMigration {
	return &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "test-storage-version-migration-1"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: group, Resource: resource}},
	}
}

var transition = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func condition(t svmv1.MigrationConditionType, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: status, Reason: "TestReason", Message: "TestMessage", LastTransitionTime: transition}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "storagemigration.k8s.io/v1" || r.Resource != "storageversionmigrations" || r.Kind != "StorageVersionMigration" ||
		r.SingularName != "storageversionmigration" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NameSubdomain || r.ShortNames != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.NewList().(*svmv1.StorageVersionMigrationList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	withStatus := migration("", "foo")
	withStatus.Status.Conditions = []metav1.Condition{condition(svmv1.MigrationSucceeded, metav1.ConditionTrue)}
	tests := []struct {
		name string
		svm  *svmv1.StorageVersionMigration
		want []string
	}{
		{"conformance", migration("", "foo"), nil},
		{"status is dropped", withStatus, nil},
		{"grouped", migration("apps", "deployments"), nil},
		{"no resource", migration("apps", ""), []string{"FieldValueRequired spec.resource.resource"}},
		{"resource not a DNS-1035 label", migration("", "1foo"), []string{"FieldValueInvalid spec.resource.resource"}},
		{"bad group", migration("Apps_", "foo"), []string{"FieldValueInvalid spec.resource.group"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.svm), tt.want...)
			if len(tt.svm.Status.Conditions) > 0 {
				t.Errorf("status kept on create: %+v", tt.svm.Status)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	old := migration("", "foo")
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"test.storagemigration.example.com": "test"}
	tests := []struct {
		name string
		svm  *svmv1.StorageVersionMigration
		want []string
	}{
		{"label", labelled, nil},
		{"other resource", migration("", "bar"), []string{"FieldValueInvalid spec"}},
		{"resource dropped", migration("", ""), []string{"FieldValueRequired spec.resource.resource", "FieldValueInvalid spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Update(Resource(), tt.svm, old), tt.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	withStatus := func(rv string, conditions ...metav1.Condition) *svmv1.StorageVersionMigration {
		svm := migration("", "foo")
		svm.Status = svmv1.StorageVersionMigrationStatus{ResourceVersion: rv, Conditions: conditions}
		return svm
	}
	running := condition(svmv1.MigrationRunning, metav1.ConditionTrue)
	succeeded := condition(svmv1.MigrationSucceeded, metav1.ConditionTrue)
	failed := condition(svmv1.MigrationFailed, metav1.ConditionTrue)
	tests := []struct {
		name     string
		svm, old *svmv1.StorageVersionMigration
		want     []string
	}{
		{"conformance condition", withStatus("", condition("TestCondition", metav1.ConditionTrue)), withStatus(""), nil},
		{"running with a resource version", withStatus("42", running), withStatus(""), nil},
		{"succeeded", withStatus("42", succeeded), withStatus("42", running), nil},
		{"bare condition", withStatus("", metav1.Condition{Type: "Running", Status: "Maybe"}), withStatus(""),
			[]string{"FieldValueNotSupported status.conditions[0].status", "FieldValueRequired status.conditions[0].lastTransitionTime", "FieldValueRequired status.conditions[0].reason"}},
		{"duplicate condition", withStatus("", running, running), withStatus(""), []string{"FieldValueDuplicate status.conditions[1]"}},
		{"bad resource version", withStatus("abc"), withStatus(""), []string{"FieldValueInvalid status.resourceVersion"}},
		{"resource version changes", withStatus("43"), withStatus("42"), []string{"FieldValueInvalid status.resourceVersion"}},
		{"succeeded and failed", withStatus("", succeeded, failed), withStatus(""), []string{"FieldValueInvalid status.conditions"}},
		{"success undone", withStatus("", condition(svmv1.MigrationSucceeded, metav1.ConditionFalse)), withStatus("", succeeded), []string{"FieldValueInvalid status.conditions"}},
		{"failure undone", withStatus(""), withStatus("", failed), []string{"FieldValueInvalid status.conditions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, Resource().ValidateStatusUpdate(tt.svm, tt.old), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	tests := []struct {
		name       string
		svm        *svmv1.StorageVersionMigration
		conditions []metav1.Condition
		want       []interface{}
	}{
		{"new", migration("", "foo"), nil, []interface{}{"test-storage-version-migration-1", "foo", "Unknown"}},
		{"running", migration("apps", "deployments"), []metav1.Condition{condition(svmv1.MigrationRunning, metav1.ConditionTrue)},
			[]interface{}{"test-storage-version-migration-1", "deployments.apps", "Running"}},
		{"succeeded after running", migration("", "foo"), []metav1.Condition{
			condition(svmv1.MigrationRunning, metav1.ConditionFalse), condition(svmv1.MigrationSucceeded, metav1.ConditionTrue), condition("TestCondition", metav1.ConditionTrue),
		}, []interface{}{"test-storage-version-migration-1", "foo", "Succeeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.svm.Status.Conditions = tt.conditions
			if row := r.Row(tt.svm, time.Now()); !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %#v, want %#v", row, tt.want)
			}
		})
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
		if c.Format != "" {
			t.Errorf("column %s has format %q; upstream's has none", c.Name, c.Format)
		}
	}
	if want := []string{"Name", "Resource", "Status"}; !reflect.DeepEqual(headers, want) {
		t.Errorf("columns %v, want %v", headers, want)
	}
}
