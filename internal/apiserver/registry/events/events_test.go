package events

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	cases := []struct {
		name string
		ev   corev1.Event
		want []string
	}{
		{"old style", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns1"}}, nil},
		{"old style wrong namespace", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns2"}},
			[]string{"involvedObject.namespace"}},
		{"node event in default", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}, nil},
		{"new style complete", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, EventTime: now,
			InvolvedObject: corev1.ObjectReference{Namespace: "ns1"}, ReportingController: "orch.io/kubelet", ReportingInstance: "n1", Action: "Pull", Reason: "Pulled"}, nil},
		{"new style incomplete", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}, EventTime: now, InvolvedObject: corev1.ObjectReference{Namespace: "ns1"}},
			[]string{"reportingComponent", "reportingInstance", "action", "reason"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().Validate(&tc.ev) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRowAndFields(t *testing.T) {
	now := time.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", FieldPath: "spec.containers{nginx}", UID: "u1"},
		Reason:         "Pulled",
		Message:        "Successfully pulled image \"nginx\"\n",
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
		FirstTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)),
		LastTimestamp:  metav1.NewTime(now.Add(-2 * time.Minute)),
		Count:          4,
	}
	want := []interface{}{"2m", "Normal", "Pulled", "pod/web", "spec.containers{nginx}", "kubelet, n1",
		"Successfully pulled image \"nginx\"", "10m", int64(4), "web.17a"}
	if got := Resource().Row(ev, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v\nwant  %v", got, want)
	}
	if n := len(Resource().Columns); n != len(want) {
		t.Errorf("%d columns", n)
	}

	series := &corev1.Event{EventTime: metav1.NewMicroTime(now.Add(-time.Hour)), ReportingController: "ctrl",
		Series:         &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-30 * time.Second))},
		InvolvedObject: corev1.ObjectReference{Kind: "Node"}}
	got := Resource().Row(series, now)
	if got[0] != "30s" || got[3] != "node" || got[5] != "ctrl" || got[7] != "60m" || got[8] != int64(7) {
		t.Errorf("series row = %v", got)
	}

	f := Resource().SelectableFields(ev)
	for k, v := range map[string]string{"involvedObject.kind": "Pod", "involvedObject.name": "web", "involvedObject.uid": "u1", "reason": "Pulled", "source": "kubelet", "type": "Normal"} {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
}
