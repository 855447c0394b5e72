package deployments

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

func deployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

func TestDefault(t *testing.T) {
	d := deployment()
	Resource().Default(d)
	s := d.Spec
	if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
		t.Errorf("defaults: replicas %d, history %d, deadline %d", *s.Replicas, *s.RevisionHistoryLimit, *s.ProgressDeadlineSeconds)
	}
	if s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || s.Strategy.RollingUpdate.MaxSurge.String() != "25%" || s.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" {
		t.Errorf("strategy = %+v", s.Strategy)
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || s.Template.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("pod template not defaulted: %+v", s.Template.Spec)
	}

	recreate := deployment()
	recreate.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	Resource().Default(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Error("Recreate got a rollingUpdate")
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name   string
		change func(*appsv1.Deployment)
		want   []string
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }, []string{"FieldValueInvalid spec.replicas"}},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"FieldValueRequired spec.selector", "FieldValueInvalid spec.template.metadata.labels"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []string{"FieldValueInvalid spec.selector"}},
		{"selector mismatch", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} }, []string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"no containers", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, []string{"FieldValueRequired spec.template.spec.containers"}},
		{"restart never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, []string{"FieldValueNotSupported spec.template.spec.restartPolicy"}},
		{"both zero", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}, []string{"FieldValueInvalid spec.strategy.rollingUpdate.maxUnavailable"}},
		{"bad percent", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("lots"))}
		}, []string{"FieldValueInvalid spec.strategy.rollingUpdate.maxSurge"}},
		{"unavailable over 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromString("120%"))}
		}, []string{"FieldValueInvalid spec.strategy.rollingUpdate.maxUnavailable"}},
		{"recreate with rolling update", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, []string{"FieldValueForbidden spec.strategy.rollingUpdate"}},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []string{"FieldValueNotSupported spec.strategy.type"}},
		{"deadline too short", func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 30
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
		}, []string{"FieldValueInvalid spec.progressDeadlineSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment()
			tt.change(d)
			registrytest.ExpectErrors(t, registrytest.Validate(r, d, nil), tt.want...)
		})
	}
	mismatch := deployment()
	mismatch.Spec.Template.Labels = nil
	registrytest.ExpectDetail(t, registrytest.Validate(r, mismatch, nil), "spec.template.metadata.labels", "`selector` does not match template `labels`")
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := deployment()
	r.Default(old)
	moved := deployment()
	moved.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "fe"}}
	moved.Spec.Template.Labels = moved.Spec.Selector.MatchLabels
	errs := registrytest.Validate(r, moved, old)
	registrytest.ExpectErrors(t, errs, "FieldValueInvalid spec.selector")
	registrytest.ExpectDetail(t, errs, "spec.selector", "field is immutable")

	scaled := deployment()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	registrytest.ExpectErrors(t, registrytest.Validate(r, scaled, old))
}

func TestScaleAndStatus(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.Scale == nil || r.ShortNames[0] != "deploy" || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	d := deployment()
	d.Status.Replicas = 7
	r.PrepareForCreate(d)
	if d.Status.Replicas != 0 {
		t.Error("status not reset on create")
	}
	if got := r.Scale.SpecReplicas(d); got != 1 {
		t.Errorf("unset replicas read as %d", got)
	}
	r.Scale.SetSpecReplicas(d, 4)
	d.Status.Replicas = 3
	if r.Scale.SpecReplicas(d) != 4 || r.Scale.StatusReplicas(d) != 3 || r.Scale.Selector(d) != "app=web" {
		t.Errorf("scale: %d %d %q", r.Scale.SpecReplicas(d), r.Scale.StatusReplicas(d), r.Scale.Selector(d))
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	d := deployment()
	d.CreationTimestamp = metav1.NewTime(now.Add(-26 * time.Hour))
	d.Spec.Replicas = ptr.To[int32](3)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
	d.Status = appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}
	row := r.Row(d, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web", "2/3", int64(3), int64(2), "26h", "web,sidecar", "nginx:1.27,busybox", "app=web"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	for i, c := range r.Columns {
		if wide := i >= 5; (c.Priority == 1) != wide {
			t.Errorf("column %s priority %d", c.Name, c.Priority)
		}
	}
}
