package namespaces

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestPrepareForCreate(t *testing.T) {
	r := Resource()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	r.Default(ns)
	r.PrepareForCreate(ns)
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("phase = %q, want Active", ns.Status.Phase)
	}
	if want := []corev1.FinalizerName{"kubernetes"}; !reflect.DeepEqual(ns.Spec.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", ns.Spec.Finalizers, want)
	}
	if got := ns.Labels["kubernetes.io/metadata.name"]; got != "team-a" {
		t.Errorf("name label = %q, want team-a", got)
	}
}

func TestPrepareForUpdateKeepsSpecAndLabel(t *testing.T) {
	r := Resource()
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"kubernetes.io/metadata.name": "b"}}}
	r.PrepareForUpdate(ns, old)
	if len(ns.Spec.Finalizers) != 1 || ns.Labels["kubernetes.io/metadata.name"] != "a" {
		t.Errorf("got finalizers %v labels %v", ns.Spec.Finalizers, ns.Labels)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		finalizer string
		valid     bool
	}{
		{"kubernetes", true},
		{"example.com/cleanup", true},
		{"cleanup", false},
		{"bad name", false},
	}
	for _, tc := range cases {
		ns := &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerName(tc.finalizer)}}}
		errs := Resource().Validate(ns)
		if (len(errs) == 0) != tc.valid {
			t.Errorf("finalizer %q: errors %v, want valid=%v", tc.finalizer, errs, tc.valid)
		}
	}
}

func TestTableAndFields(t *testing.T) {
	r := Resource()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	if got, want := r.Row(ns, now), []interface{}{"default", "Active", "3h"}; !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v, want %v", got, want)
	}
	if len(r.Columns) != 3 || r.Columns[0].Format != "name" {
		t.Errorf("unexpected columns %v", r.Columns)
	}
	if got, want := r.SelectableFields(ns), (fields.Set{"status.phase": "Active", "name": "default"}); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
}
