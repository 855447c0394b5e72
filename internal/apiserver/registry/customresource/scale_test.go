package customresource

import (
	"reflect"
	"testing"
)

func TestScale(t *testing.T) {
	tests := []struct {
		name                 string
		spec, status         string
		wantSpec, wantStatus int32
		wantSelector         string
		setTo                int32
		wantSpecAfterSet     map[string]interface{}
	}{
		{
			name: "values at the paths",
			spec: "{replicas: 3, color: red}", status: "{replicas: 2, selector: 'app=w'}",
			wantSpec: 3, wantStatus: 2, wantSelector: "app=w",
			setTo: 5, wantSpecAfterSet: map[string]interface{}{"replicas": int64(5), "color": "red"},
		},
		{
			name:  "missing values read as zero, and setting creates spec",
			setTo: 4, wantSpecAfterSet: map[string]interface{}{"replicas": int64(4)},
		},
		{
			name: "mistyped values read as zero",
			spec: "{replicas: three}", status: "{replicas: two, selector: 7}",
			setTo: 1, wantSpecAfterSet: map[string]interface{}{"replicas": int64(1)},
		},
	}
	scale := widgets(t, "v1").Scale
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := widget(t, tt.spec, tt.status)
			if got := scale.SpecReplicas(obj); got != tt.wantSpec {
				t.Errorf("SpecReplicas = %d, want %d", got, tt.wantSpec)
			}
			if got := scale.StatusReplicas(obj); got != tt.wantStatus {
				t.Errorf("StatusReplicas = %d, want %d", got, tt.wantStatus)
			}
			if got := scale.Selector(obj); got != tt.wantSelector {
				t.Errorf("Selector = %q, want %q", got, tt.wantSelector)
			}
			scale.SetSpecReplicas(obj, tt.setTo)
			if got := obj.Object["spec"]; !reflect.DeepEqual(got, tt.wantSpecAfterSet) {
				t.Errorf("spec after SetSpecReplicas(%d) = %v, want %v", tt.setTo, got, tt.wantSpecAfterSet)
			}
		})
	}
}
