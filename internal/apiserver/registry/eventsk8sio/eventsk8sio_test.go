package eventsk8sio

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func event() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web-0.17a", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(now.Add(-2 * time.Minute)),
		ReportingController: "kubelet",
		ReportingInstance:   "node-1",
		Action:              "Pulling",
		Reason:              "Pulling",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", FieldPath: "spec.containers{web}"},
		Note:                "Pulling image \"nginx\" ",
		Type:                corev1.EventTypeNormal,
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name   string
		change func(*eventsv1.Event)
		want   []string
	}{
		{"valid", func(*eventsv1.Event) {}, nil},
		{"no event time", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} }, []string{"FieldValueRequired eventTime"}},
		{"bad type", func(e *eventsv1.Event) { e.Type = "Info" }, []string{"FieldValueInvalid type"}},
		{"no reporting controller", func(e *eventsv1.Event) { e.ReportingController = "" }, []string{"FieldValueRequired reportingController", "FieldValueInvalid reportingController", "FieldValueInvalid reportingController"}},
		{"no action", func(e *eventsv1.Event) { e.Action = "" }, []string{"FieldValueRequired action"}},
		{"other namespace", func(e *eventsv1.Event) { e.Regarding.Namespace = ""; e.Namespace = "apps" }, []string{"FieldValueInvalid involvedObject.namespace"}},
		{"deprecated count", func(e *eventsv1.Event) { e.DeprecatedCount = 3 }, []string{"FieldValueInvalid deprecatedCount"}},
		{"short series", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 1} }, []string{"FieldValueInvalid series.count", "FieldValueRequired series.lastObservedTime"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := event()
			tt.change(e)
			registrytest.ExpectErrors(t, registrytest.Validate(r, e, nil), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	series := event()
	series.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now)}
	registrytest.ExpectErrors(t, registrytest.Validate(r, series, event()))

	changed := event()
	changed.Note = "other"
	changed.Reason = "Pulled"
	registrytest.ExpectErrors(t, registrytest.Validate(r, changed, event()), "FieldValueInvalid reason", "FieldValueInvalid message")

	nanos := event()
	nanos.EventTime = metav1.NewMicroTime(nanos.EventTime.Add(300 * time.Nanosecond))
	registrytest.ExpectErrors(t, registrytest.Validate(r, nanos, event()))
}

func TestRow(t *testing.T) {
	r := Resource()
	e := event()
	row := r.Row(e, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"2m", "Normal", "Pulling", "pod/web-0", "spec.containers{web}", "kubelet, node-1", "Pulling image \"nginx\"", "2m", int64(1), "web-0.17a"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	e.Series = &eventsv1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(now.Add(-10 * time.Second))}
	row = r.Row(e, now)
	if row[0] != "10s" || row[8] != int64(5) {
		t.Errorf("series row = %v", row)
	}
}

func TestSelectableFields(t *testing.T) {
	f := Resource().SelectableFields(event())
	if f["regarding.name"] != "web-0" || f["reportingController"] != "kubelet" || f["type"] != "Normal" || f["reason"] != "Pulling" {
		t.Errorf("fields = %v", f)
	}
}
