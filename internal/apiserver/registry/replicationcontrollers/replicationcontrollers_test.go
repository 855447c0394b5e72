package replicationcontrollers

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newRC(mutate func(*corev1.ReplicationController)) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
		}},
	}
	if mutate != nil {
		mutate(rc)
	}
	Resource().Default(rc)
	return rc
}

func TestDefault(t *testing.T) {
	rc := newRC(nil)
	if *rc.Spec.Replicas != 1 {
		t.Errorf("replicas = %d", *rc.Spec.Replicas)
	}
	if !reflect.DeepEqual(rc.Spec.Selector, map[string]string{"app": "web"}) || !reflect.DeepEqual(rc.Labels, map[string]string{"app": "web"}) {
		t.Errorf("selector %v labels %v", rc.Spec.Selector, rc.Labels)
	}
	if rc.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("template not defaulted")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.ReplicationController)
		want   []string
	}{
		{"valid", nil, nil},
		{"selector mismatch", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]string{"spec.template.metadata.labels"}},
		{"restart never", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			[]string{"spec.template.spec.restartPolicy"}},
		{"negative replicas", func(rc *corev1.ReplicationController) { n := int32(-1); rc.Spec.Replicas = &n }, []string{"spec.replicas"}},
		{"no template", func(rc *corev1.ReplicationController) {
			rc.Spec.Template = nil
			rc.Spec.Selector = map[string]string{"a": "b"}
		},
			[]string{"spec.template"}},
		{"no container name", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers[0].Name = "" },
			[]string{"spec.template.spec.containers[0].name"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().Validate(newRC(tc.mutate)) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScaleAndRow(t *testing.T) {
	now := time.Now()
	rc := newRC(func(rc *corev1.ReplicationController) { rc.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)) })
	rc.Status.Replicas, rc.Status.ReadyReplicas = 1, 1
	s := Resource().Scale
	s.SetSpecReplicas(rc, 3)
	if s.SpecReplicas(rc) != 3 || s.StatusReplicas(rc) != 1 || s.Selector(rc) != "app=web" {
		t.Errorf("scale: %d %d %q", s.SpecReplicas(rc), s.StatusReplicas(rc), s.Selector(rc))
	}
	want := []interface{}{"web", int64(3), int64(1), int64(1), "60m", "nginx", "nginx:1.27", "app=web"}
	if got := Resource().Row(rc, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v, want %v", got, want)
	}
	if got := Resource().SelectableFields(rc)["status.replicas"]; got != "1" {
		t.Errorf("status.replicas = %q", got)
	}
}
