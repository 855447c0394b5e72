package customresource

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		version    string
		wantStatus bool
	}{
		{version: "v1", wantStatus: false}, // status subresource: create cannot set status
		{version: "v2", wantStatus: true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			obj := widget(t, "{replicas: 1}", "{replicas: 3}")
			obj.SetAPIVersion("example.com/" + tt.version)
			widgets(t, tt.version).PrepareForCreate(obj)
			if _, has := obj.Object["status"]; has != tt.wantStatus {
				t.Errorf("status kept = %v, want %v", has, tt.wantStatus)
			}
			if obj.GetGeneration() != 1 {
				t.Errorf("generation = %d, want 1", obj.GetGeneration())
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name           string
		version        string
		oldSpec        string
		oldStatus      string
		spec, status   string
		labels         bool
		wantStatus     interface{}
		wantGeneration int64
	}{
		{
			name: "v1: status stays as stored, spec change moves generation", version: "v1",
			oldSpec: "{replicas: 1}", oldStatus: "{replicas: 1}",
			spec: "{replicas: 2}", status: "{replicas: 9}",
			wantStatus: map[string]interface{}{"replicas": int64(1)}, wantGeneration: 5,
		},
		{
			name: "v1: a status where none was stored is dropped", version: "v1",
			oldSpec: "{replicas: 1}",
			spec:    "{replicas: 1}", status: "{replicas: 9}",
			wantGeneration: 4,
		},
		{
			name: "v1: metadata changes keep generation", version: "v1",
			oldSpec: "{replicas: 1}", spec: "{replicas: 1}", labels: true,
			wantGeneration: 4,
		},
		{
			name: "v2: without a status subresource, status is the client's and moves generation", version: "v2",
			oldSpec: "{size: 1}", oldStatus: "{ready: false}",
			spec: "{size: 1}", status: "{ready: true}",
			wantStatus: map[string]interface{}{"ready": true}, wantGeneration: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, obj := widget(t, tt.oldSpec, tt.oldStatus), widget(t, tt.spec, tt.status)
			old.SetAPIVersion("example.com/" + tt.version)
			obj.SetAPIVersion("example.com/" + tt.version)
			old.SetGeneration(4)
			obj.SetGeneration(4)
			if tt.labels {
				obj.SetLabels(map[string]string{"a": "b"})
			}
			widgets(t, tt.version).PrepareForUpdate(obj, old)
			if got := obj.Object["status"]; !reflect.DeepEqual(got, tt.wantStatus) {
				t.Errorf("status = %v, want %v", got, tt.wantStatus)
			}
			if obj.GetGeneration() != tt.wantGeneration {
				t.Errorf("generation = %d, want %d", obj.GetGeneration(), tt.wantGeneration)
			}
		})
	}
}

func TestPrepareForStatusUpdate(t *testing.T) {
	tests := []struct {
		name       string
		status     string
		wantStatus interface{}
	}{
		{name: "new status", status: "{replicas: 2}", wantStatus: map[string]interface{}{"replicas": int64(2)}},
		{name: "no status removes it", status: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := widget(t, "{replicas: 1}", "{replicas: 1}")
			old.SetLabels(map[string]string{"stored": "yes"})
			old.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "old"}})
			obj := widget(t, "{replicas: 7}", tt.status)
			obj.SetLabels(map[string]string{"sneaky": "yes"})
			obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "status-writer"}})
			PrepareForStatusUpdate(obj, old)
			if got := obj.Object["status"]; !reflect.DeepEqual(got, tt.wantStatus) {
				t.Errorf("status = %v, want %v", got, tt.wantStatus)
			}
			if got := obj.Object["spec"]; !reflect.DeepEqual(got, old.Object["spec"]) {
				t.Errorf("spec = %v, want the stored %v", got, old.Object["spec"])
			}
			if got := obj.GetLabels(); !reflect.DeepEqual(got, map[string]string{"stored": "yes"}) {
				t.Errorf("labels = %v, want the stored ones", got)
			}
			if mf := obj.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "status-writer" {
				t.Errorf("managedFields = %v, want the new object's", mf)
			}
			if _, found := old.Object["status"]; !found {
				t.Error("the stored object lost its status")
			}
		})
	}
}
