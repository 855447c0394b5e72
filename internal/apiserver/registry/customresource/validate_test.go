package customresource

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr is an expected error: its type, field ("<nil>" for the whole
// object) and a part of its detail.
type wantErr struct {
	typ    field.ErrorType
	field  string
	detail string
}

const notChecked = "some validation rules were not checked"

// checkErrors fails unless errs match want, in any order.
func checkErrors(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	used := make([]bool, len(errs))
	for _, w := range want {
		found := false
		for i, err := range errs {
			if !used[i] && err.Type == w.typ && err.Field == w.field && strings.Contains(err.Detail, w.detail) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no %s error on %q with %q in %v", w.typ, w.field, w.detail, errs)
		}
	}
	for i, err := range errs {
		if !used[i] {
			t.Errorf("unexpected error: %v", err)
		}
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  func(t *testing.T) *unstructured.Unstructured
		want []wantErr
	}{
		{
			name: "valid",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 2, maxReplicas: 3, color: red, port: 80, template: {apiVersion: v1, kind: Pod, metadata: {name: p}}, ports: [{name: a}, {name: b}]}", "")
			},
		},
		{
			name: "CEL rule",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 5, maxReplicas: 3, color: red}", "")
			},
			want: []wantErr{{field.ErrorTypeInvalid, "spec", "replicas must not exceed maxReplicas"}},
		},
		{
			name: "enum: the rules are not checked after a blocking error",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 5, maxReplicas: 3, color: pink}", "")
			},
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.color", `"blue"`}, {field.ErrorTypeInvalid, "<nil>", notChecked}},
		},
		{
			name: "minimum and the scale path",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: -1, maxReplicas: 3, color: red}", "")
			},
			want: []wantErr{
				{field.ErrorTypeInvalid, "spec.replicas", "greater than or equal to 0"},
				{field.ErrorTypeInvalid, ".spec.replicas", "should be a non-negative integer"},
			},
		},
		{
			name: "int-or-string takes no boolean",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 1, maxReplicas: 3, color: red, port: true}", "")
			},
			want: []wantErr{{field.ErrorTypeTypeInvalid, "spec.port", "must be of type"}, {field.ErrorTypeInvalid, "<nil>", notChecked}},
		},
		{
			name: "list-map keys are unique",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 1, maxReplicas: 3, color: red, ports: [{name: a, port: 1}, {name: a, port: 2}]}", "")
			},
			want: []wantErr{{field.ErrorTypeDuplicate, "spec.ports[1]", ""}},
		},
		{
			name: "embedded resource needs apiVersion and kind",
			obj: func(t *testing.T) *unstructured.Unstructured {
				return widget(t, "{replicas: 1, maxReplicas: 3, color: red, template: {metadata: {name: p}}}", "")
			},
			want: []wantErr{
				{field.ErrorTypeRequired, "spec.template.apiVersion", ""},
				{field.ErrorTypeRequired, "spec.template.kind", ""},
				{field.ErrorTypeInvalid, "<nil>", notChecked},
			},
		},
		{
			name: "another kind",
			obj: func(t *testing.T) *unstructured.Unstructured {
				u := widget(t, "{replicas: 1, maxReplicas: 3, color: red}", "")
				u.SetKind("Gadget")
				return u
			},
			want: []wantErr{{field.ErrorTypeInvalid, "kind", "must be Widget"}},
		},
		{
			name: "metadata errors are the handler's, but still hold back the rules",
			obj: func(t *testing.T) *unstructured.Unstructured {
				u := widget(t, "{replicas: 5, maxReplicas: 3, color: red}", "")
				u.SetName("")
				return u
			},
			want: []wantErr{{field.ErrorTypeInvalid, "<nil>", notChecked}},
		},
	}
	res := widgets(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, res.ValidateCreate(tt.obj(t)), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		labels   bool
		want     []wantErr
	}{
		{
			name: "a valid change",
			old:  "{replicas: 1, maxReplicas: 3, color: blue}",
			new:  "{replicas: 2, maxReplicas: 3, color: blue}",
		},
		{
			name: "transition rule with oldSelf",
			old:  "{replicas: 1, maxReplicas: 3, color: blue}",
			new:  "{replicas: 1, maxReplicas: 3, color: red}",
			want: []wantErr{{field.ErrorTypeInvalid, "spec", "color is immutable"}},
		},
		{
			name:   "ratcheting: a broken rule on an unchanged spec is forgiven",
			old:    "{replicas: 5, maxReplicas: 3, color: red}",
			new:    "{replicas: 5, maxReplicas: 3, color: red}",
			labels: true,
		},
		{
			name: "ratcheting: not when the spec changes",
			old:  "{replicas: 5, maxReplicas: 3, color: red}",
			new:  "{replicas: 6, maxReplicas: 3, color: red}",
			want: []wantErr{{field.ErrorTypeInvalid, "spec", "replicas must not exceed maxReplicas"}},
		},
		{
			name:   "ratcheting: an unchanged invalid value is forgiven",
			old:    "{replicas: 1, maxReplicas: 3, color: pink}",
			new:    "{replicas: 2, maxReplicas: 3, color: pink}",
			labels: true,
		},
		{
			name: "a changed invalid value is not",
			old:  "{replicas: 1, maxReplicas: 3, color: blue}",
			new:  "{replicas: 1, maxReplicas: 3, color: pink}",
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.color", ""}, {field.ErrorTypeInvalid, "<nil>", notChecked}},
		},
		{
			name: "list-map duplicates are forgiven only when the stored object had them",
			old:  "{replicas: 1, maxReplicas: 3, color: blue, ports: [{name: a}]}",
			new:  "{replicas: 1, maxReplicas: 3, color: blue, ports: [{name: a}, {name: a}]}",
			want: []wantErr{{field.ErrorTypeDuplicate, "spec.ports[1]", ""}},
		},
	}
	res := widgets(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, obj := widget(t, tt.old, ""), widget(t, tt.new, "")
			if tt.labels {
				obj.SetLabels(map[string]string{"touched": "yes"})
			}
			checkErrors(t, res.ValidateUpdate(obj, old), tt.want)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	tests := []struct {
		name      string
		oldSpec   string
		oldStatus string
		status    string
		want      []wantErr
	}{
		{
			name:   "valid status",
			status: "{replicas: 2, phase: Running}",
		},
		{
			name:   "status schema",
			status: "{phase: AVeryLongPhaseName}",
			want:   []wantErr{{field.ErrorTypeTooLong, "status.phase", ""}, {field.ErrorTypeInvalid, "<nil>", notChecked}},
		},
		{
			name:   "scale status replicas",
			status: "{replicas: -1}",
			want:   []wantErr{{field.ErrorTypeInvalid, ".status.replicas", "non-negative"}},
		},
		{
			name:    "an invalid stored spec is not the status writer's concern",
			oldSpec: "{replicas: 5, maxReplicas: 3, color: pink}",
			status:  "{replicas: 1}",
		},
		{
			name:      "an invalid stored status field that stays is forgiven",
			oldStatus: "{phase: AVeryLongPhaseName}",
			status:    "{phase: AVeryLongPhaseName, replicas: 1}",
		},
	}
	res := widgets(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.oldSpec
			if spec == "" {
				spec = "{replicas: 1, maxReplicas: 3, color: blue}"
			}
			old := widget(t, spec, tt.oldStatus)
			obj := widget(t, spec, tt.status)
			checkErrors(t, res.ValidateStatusUpdate(obj, old), tt.want)
		})
	}
}
