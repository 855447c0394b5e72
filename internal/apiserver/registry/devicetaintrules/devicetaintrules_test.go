package devicetaintrules

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// rule is the e2e CRUD test's rule: no selector, so no device is tainted.
func rule() *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "test-dra-1234"},
		Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{
			Key: "testing", Effect: resourcev1.DeviceTaintEffectNone,
		}},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "resource.k8s.io/v1" || r.Resource != "devicetaintrules" || r.Kind != "DeviceTaintRule" ||
		r.SingularName != "devicetaintrule" || r.Namespaced || !r.HasStatus || !r.UpdateRequiresResourceVersion ||
		r.ShortNames != nil || r.Categories != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.New().(*resourcev1.DeviceTaintRule); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*resourcev1.DeviceTaintRuleList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*resourcev1.DeviceTaintRule)
		want   []want
	}{
		{"e2e", func(*resourcev1.DeviceTaintRule) {}, nil},
		{"selector", func(r *resourcev1.DeviceTaintRule) {
			r.Spec.DeviceSelector = &resourcev1.DeviceTaintSelector{Driver: ptr.To("dra.example.com"), Pool: ptr.To("node-1"), Device: ptr.To("gpu-0")}
			r.Spec.Taint = resourcev1.DeviceTaint{Key: "example.com/unhealthy", Value: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute}
		}, nil},
		{"bad selector", func(r *resourcev1.DeviceTaintRule) {
			r.Spec.DeviceSelector = &resourcev1.DeviceTaintSelector{Driver: ptr.To(""), Pool: ptr.To("a/"), Device: ptr.To("GPU")}
		}, []want{
			{"FieldValueRequired spec.deviceSelector.driver", ""},
			{"FieldValueInvalid spec.deviceSelector.pool", "RFC 1123 subdomain"},
			{"FieldValueInvalid spec.deviceSelector.device", "RFC 1123 label"},
		}},
		{"bad taint", func(r *resourcev1.DeviceTaintRule) {
			r.Spec.Taint = resourcev1.DeviceTaint{Key: "a/b/c", Value: "-"}
		}, []want{
			{"FieldValueInvalid spec.taint.key", "a valid label key must consist of"},
			{"FieldValueInvalid spec.taint.value", "a valid label must be"},
			{"FieldValueRequired spec.taint.effect", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rule()
			tt.modify(r)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), r), tt.want...)
		})
	}

	r := rule()
	r.Status.Conditions = []metav1.Condition{{Type: "Testing"}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), r))
	if r.Status.Conditions != nil || r.Spec.Taint.TimeAdded == nil {
		t.Errorf("after create: status %+v, timeAdded %v", r.Status, r.Spec.Taint.TimeAdded)
	}
}

func TestUpdate(t *testing.T) {
	added := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	old := rule()
	old.Spec.Taint.TimeAdded = &added

	// The e2e update: a new effect, stamped now.
	r := old.DeepCopy()
	r.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoExecute
	registrytest.ExpectWant(t, registrytest.Update(Resource(), r, old))
	if r.Spec.Taint.TimeAdded.Equal(&added) || r.Spec.Taint.TimeAdded.Nanosecond() != 0 {
		t.Errorf("timeAdded after a new effect = %v", r.Spec.Taint.TimeAdded)
	}
	// A new effect with a new time keeps the client's time.
	r = old.DeepCopy()
	r.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoSchedule
	r.Spec.Taint.TimeAdded = ptr.To(metav1.NewTime(added.Add(time.Hour)))
	registrytest.ExpectWant(t, registrytest.Update(Resource(), r, old))
	if !r.Spec.Taint.TimeAdded.Equal(ptr.To(metav1.NewTime(added.Add(time.Hour)))) {
		t.Errorf("timeAdded = %v, want the client's", r.Spec.Taint.TimeAdded)
	}
	// A stored effect upstream no longer knows is not checked again.
	old.Spec.Taint.Effect = "Legacy"
	r = old.DeepCopy()
	r.Spec.Taint.Value = "v"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), r, old))
	r.Spec.Taint.Effect = "Newer"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), r, old), want{"FieldValueNotSupported spec.taint.effect", ""})
}

func TestStatusUpdate(t *testing.T) {
	condition := func(tp string) metav1.Condition {
		return metav1.Condition{Type: tp, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: "E2E_test_running",
			Message: "This condition can be ignored."}
	}
	var nine []metav1.Condition
	for i := 0; i < 9; i++ {
		nine = append(nine, condition(fmt.Sprintf("C%d", i)))
	}
	tests := []struct {
		name       string
		conditions []metav1.Condition
		want       []want
	}{
		{"e2e", []metav1.Condition{condition("Testing")}, nil},
		{"repeated type, no reason", []metav1.Condition{condition("A"), condition("A"), {Type: "B", Status: "Yes", LastTransitionTime: metav1.Now()}}, []want{
			{"FieldValueDuplicate status.conditions[1]", ""},
			{"FieldValueNotSupported status.conditions[2].status", ""},
			{"FieldValueRequired status.conditions[2].reason", ""},
		}},
		{"nine", nine, []want{{"FieldValueTooMany status.conditions", "at most 8"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := rule()
			r := old.DeepCopy()
			r.Status.Conditions = tt.conditions
			registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(r, old), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	dtr := rule()
	dtr.CreationTimestamp = created
	dtr.Spec.Taint.Value = "v"
	dtr.Spec.Taint.TimeAdded = ptr.To(metav1.NewTime(created.Add(time.Hour)))
	row := r.Row(dtr, created.Add(2*time.Hour))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"test-dra-1234", "testing", "v", "None", "60m", "120m"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	dtr.Spec.Taint.TimeAdded = nil
	if got := r.Row(dtr, created.Time)[4]; got != "" {
		t.Errorf("timeAdded cell without a time = %#v", got)
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Key", "Value", "Effect", "TimeAdded", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
