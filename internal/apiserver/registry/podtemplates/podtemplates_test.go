package podtemplates

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultValidateRow(t *testing.T) {
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tmpl"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "web", Image: "nginx"}, {Name: "log", Image: "busybox:1.36"},
			}},
		},
	}
	r := Resource()
	r.Default(pt)
	spec := pt.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.Containers[1].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("template not defaulted: %+v", spec)
	}
	if spec.EnableServiceLinks != nil {
		t.Errorf("enableServiceLinks is a pod-only default")
	}
	if errs := r.Validate(pt); len(errs) != 0 {
		t.Errorf("valid template rejected: %v", errs)
	}
	want := []interface{}{"tmpl", "web,log", "nginx,busybox:1.36", "app=web"}
	if got := r.Row(pt, time.Now()); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v, want %v", got, want)
	}

	pt.Template.Spec.Containers[0].Image = ""
	if errs := r.Validate(pt); len(errs) != 1 || errs[0].Field != "template.spec.containers[0].image" {
		t.Errorf("errors = %v", errs)
	}
}
