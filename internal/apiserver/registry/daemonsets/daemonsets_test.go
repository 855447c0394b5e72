package daemonsets

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func daemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}
}

func TestDefault(t *testing.T) {
	ds := daemonSet()
	Resource().Default(ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.String() != "1" || ru.MaxSurge.String() != "0" || ru.MaxSurge.Type != intstr.Int {
		t.Errorf("strategy = %+v", ds.Spec.UpdateStrategy)
	}
	if *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("revisionHistoryLimit = %d", *ds.Spec.RevisionHistoryLimit)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name   string
		change func(*appsv1.DaemonSet)
		want   []string
	}{
		{"valid", func(*appsv1.DaemonSet) {}, nil},
		{"surge instead", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("10%"))}
		}, nil},
		{"both non-zero", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(1))}
		}, []string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.maxSurge"}},
		{"both zero", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(0))}
		}, []string{"FieldValueRequired spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{"bad type", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Surge" }, []string{"FieldValueNotSupported spec.updateStrategy.type"}},
		{"empty selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }, []string{"FieldValueInvalid spec.selector"}},
		{"mismatch", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "other"} }, []string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"deadline", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) }, []string{"FieldValueForbidden spec.template.spec.activeDeadlineSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := daemonSet()
			tt.change(ds)
			registrytest.ExpectErrors(t, registrytest.Validate(r, ds, nil), tt.want...)
		})
	}
	old := daemonSet()
	r.Default(old)
	moved := daemonSet()
	moved.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
	moved.Spec.Template.Labels = map[string]string{"app": "agent", "tier": "node"}
	registrytest.ExpectErrors(t, registrytest.Validate(r, moved, old), "FieldValueInvalid spec.selector")
}

func TestTemplateGeneration(t *testing.T) {
	r := Resource()
	ds := daemonSet()
	r.Default(ds)
	ds.Status.NumberReady = 4
	r.PrepareForCreate(ds)
	if ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" || ds.Status.NumberReady != 0 {
		t.Fatalf("create: annotations %v, status %+v", ds.Annotations, ds.Status)
	}

	same := daemonSet() // not yet defaulted, as a client would send it
	same.Spec.MinReadySeconds = 10
	r.PrepareForUpdate(same, ds)
	if got := same.Annotations[appsv1.DeprecatedTemplateGeneration]; got != "1" {
		t.Errorf("unchanged template: generation %s", got)
	}

	changed := daemonSet()
	changed.Spec.Template.Spec.Containers[0].Image = "agent:2"
	changed.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "9"}
	r.PrepareForUpdate(changed, ds)
	if got := changed.Annotations[appsv1.DeprecatedTemplateGeneration]; got != "2" {
		t.Errorf("changed template: generation %s", got)
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.ShortNames[0] != "ds" || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	now := time.Now()
	ds := daemonSet()
	ds.CreationTimestamp = metav1.NewTime(now.Add(-12 * time.Minute))
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2}
	row := r.Row(ds, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"agent", int64(3), int64(3), int64(2), int64(3), int64(2), "kubernetes.io/os=linux", "12m", "agent", "agent:1", "app=agent"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	if row := r.Row(daemonSet(), now); row[6] != "<none>" {
		t.Errorf("no node selector shows %q", row[6])
	}
}
