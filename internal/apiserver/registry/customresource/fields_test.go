package customresource

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

func TestSelectableFields(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want fields.Set
	}{
		{name: "values as strings", spec: "{color: red, replicas: 3}", want: fields.Set{"spec.color": "red", "spec.replicas": "3"}},
		{name: "absent values are empty", spec: "{}", want: fields.Set{"spec.color": "", "spec.replicas": ""}},
		{name: "no spec", want: fields.Set{"spec.color": "", "spec.replicas": ""}},
	}
	selectable := widgets(t, "v1").SelectableFields
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selectable(widget(t, tt.spec, "")); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SelectableFields = %v, want %v", got, tt.want)
			}
		})
	}
	// The apiserver asks an empty object which field labels exist.
	empty := widgets(t, "v1").New()
	if got := selectable(empty); len(got) != 2 {
		t.Errorf("SelectableFields(New()) = %v, want both declared fields", got)
	}
}
