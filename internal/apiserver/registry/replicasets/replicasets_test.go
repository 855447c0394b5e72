package replicasets

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func replicaSet() *appsv1.ReplicaSet {
	labels := map[string]string{"app": "web", "pod-template-hash": "5d4f"}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

func TestDefaultAndValidate(t *testing.T) {
	r := Resource()
	rs := replicaSet()
	registrytest.ExpectErrors(t, registrytest.Validate(r, rs, nil))
	if *rs.Spec.Replicas != 1 || rs.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("defaults not applied: %+v", rs.Spec)
	}
	tests := []struct {
		name   string
		change func(*appsv1.ReplicaSet)
		want   []string
	}{
		{"negative replicas", func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](-2) }, []string{"FieldValueInvalid spec.replicas"}},
		{"negative minReadySeconds", func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = -1 }, []string{"FieldValueInvalid spec.minReadySeconds"}},
		{"mismatch", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = map[string]string{"app": "web"} }, []string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"bad selector", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, []string{"FieldValueInvalid spec.selector.matchExpressions[0].operator", "FieldValueInvalid spec.selector"}},
		{"deadline", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }, []string{"FieldValueForbidden spec.template.spec.activeDeadlineSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := replicaSet()
			tt.change(rs)
			registrytest.ExpectErrors(t, registrytest.Validate(r, rs, nil), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := replicaSet()
	r.Default(old)
	changed := replicaSet()
	changed.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	registrytest.ExpectErrors(t, registrytest.Validate(r, changed, old), "FieldValueInvalid spec.selector")
	scaled := replicaSet()
	scaled.Spec.Replicas = ptr.To[int32](0)
	registrytest.ExpectErrors(t, registrytest.Validate(r, scaled, old))
}

func TestRowAndScale(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.Scale == nil || r.ShortNames[0] != "rs" || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	now := time.Now()
	rs := replicaSet()
	rs.CreationTimestamp = metav1.NewTime(now.Add(-7 * time.Minute))
	rs.Spec.Replicas = ptr.To[int32](3)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1}
	row := r.Row(rs, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web-5d4f", int64(3), int64(3), int64(1), "7m", "web", "nginx", "app=web,pod-template-hash=5d4f"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	if r.Scale.Selector(rs) != "app=web,pod-template-hash=5d4f" || r.Scale.StatusReplicas(rs) != 3 {
		t.Errorf("scale selector %q", r.Scale.Selector(rs))
	}
}
