package controllerrevisions

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func revision(data string, n int64) *appsv1.ControllerRevision {
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-7f9c"}, Revision: n}
	if data != "" {
		rev.Data = runtime.RawExtension{Raw: []byte(data)}
	}
	return rev
}

func TestValidate(t *testing.T) {
	r := Resource()
	registrytest.ExpectErrors(t, registrytest.Validate(r, revision(`{"spec":{}}`, 1), nil))
	errs := registrytest.Validate(r, revision("", 1), nil)
	registrytest.ExpectErrors(t, errs, "FieldValueRequired data")
	registrytest.ExpectDetail(t, errs, "data", "data is mandatory")
	registrytest.ExpectErrors(t, registrytest.Validate(r, revision(`{}`, -1), nil), "FieldValueInvalid revision")

	old := revision(`{"a":1}`, 1)
	registrytest.ExpectErrors(t, registrytest.Validate(r, revision(`{"a":2}`, 1), old), "FieldValueInvalid data")
	relabeled := revision(`{"a":1}`, 2)
	relabeled.Labels = map[string]string{"x": "y"}
	registrytest.ExpectErrors(t, registrytest.Validate(r, relabeled, old))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	rev := revision(`{}`, 3)
	rev.CreationTimestamp = metav1.NewTime(now.Add(-4 * time.Minute))
	rev.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: ptr.To(true)}}
	row := r.Row(rev, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web-7f9c", "statefulset.apps/web", int64(3), "4m"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
	if row := r.Row(revision(`{}`, 1), now); row[1] != "<none>" {
		t.Errorf("no owner: %v", row[1])
	}
}
