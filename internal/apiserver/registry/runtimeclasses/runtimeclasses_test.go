package runtimeclasses

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

// class is a runtime class as the conformance tests create them.
func class(handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "runtimeclass-e2e", Labels: map[string]string{"test": "e2e"}}, Handler: handler}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "node.k8s.io/v1" || r.Resource != "runtimeclasses" || r.Kind != "RuntimeClass" ||
		r.SingularName != "runtimeclass" || r.Namespaced || r.HasStatus || r.NameValidation != registry.NameSubdomain {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || r.SelectableFields != nil {
		t.Errorf("short names %v, field selectors set; upstream has none", r.ShortNames)
	}
	if _, ok := r.New().(*nodev1.RuntimeClass); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*nodev1.RuntimeClassList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestValidate(t *testing.T) {
	withOverhead := func(list corev1.ResourceList) *nodev1.RuntimeClass {
		rc := class("runc")
		rc.Overhead = &nodev1.Overhead{PodFixed: list}
		return rc
	}
	withScheduling := func(s nodev1.Scheduling) *nodev1.RuntimeClass {
		rc := class("runc")
		rc.Scheduling = &s
		return rc
	}
	noSchedule := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	later := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}
	evenLater := later
	evenLater.TolerationSeconds = ptr.To[int64](10)
	tests := []struct {
		name string
		rc   *nodev1.RuntimeClass
		want []string
	}{
		{"conformance handler", class("test-handler"), nil},
		{"conformance overhead", withOverhead(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}), nil},
		{"scheduling", withScheduling(nodev1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Tolerations: []corev1.Toleration{noSchedule, later}}), nil},
		{"empty scheduling", withScheduling(nodev1.Scheduling{}), nil},
		{"no handler", class(""), []string{"FieldValueRequired handler"}},
		{"handler not a DNS label", class("Run.C"), []string{"FieldValueInvalid handler"}},
		{"overhead not a container resource", withOverhead(corev1.ResourceList{"my.org": resource.MustParse("10m")}), []string{"FieldValueInvalid overhead.limits[my.org]"}},
		{"negative overhead", withOverhead(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}), []string{"FieldValueInvalid overhead.limits[memory]"}},
		{"bad node selector", withScheduling(nodev1.Scheduling{NodeSelector: map[string]string{"not a valid key!!!": "nope"}}), []string{"FieldValueInvalid scheduling.nodeSelector"}},
		{"bad toleration key", withScheduling(nodev1.Scheduling{Tolerations: []corev1.Toleration{noSchedule, {Key: "not a valid key!!!", Operator: corev1.TolerationOpExists}}}),
			[]string{"FieldValueInvalid scheduling.tolerations[1].key"}},
		{"duplicate tolerations", withScheduling(nodev1.Scheduling{Tolerations: []corev1.Toleration{later, evenLater}}), []string{"FieldValueDuplicate scheduling.tolerations[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.rc), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	annotated := class("runc")
	annotated.Annotations = map[string]string{"updated": "true"}
	tests := []struct {
		name string
		rc   *nodev1.RuntimeClass
		want []string
	}{
		{"annotations change", annotated, nil},
		{"handler changes", class("crun"), []string{"FieldValueInvalid handler"}},
		{"handler goes", class(""), []string{"FieldValueRequired handler", "FieldValueInvalid handler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Update(Resource(), tt.rc, class("runc")), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := class("runc")
	rc.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	if row, want := r.Row(rc, now), []interface{}{"runtimeclass-e2e", "runc", "3h"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
	}
	if want := []string{"Name", "Handler", "Age"}; !reflect.DeepEqual(headers, want) {
		t.Errorf("columns %v, want %v", headers, want)
	}
	if r.Columns[0].Format != "name" {
		t.Errorf("first column format %q", r.Columns[0].Format)
	}
}
