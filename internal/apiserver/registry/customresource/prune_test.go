package customresource

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPrune(t *testing.T) {
	const meta = "metadata: {name: w, namespace: default}\n"
	tests := []struct {
		name      string
		obj       string
		wantPaths []string
		// wantGone and wantKept are dotted paths that must be absent or present afterwards.
		wantGone []string
		wantKept []string
	}{
		{
			name:     "known fields stay",
			obj:      meta + "spec: {replicas: 2, port: http, extra: {anything: {deep: 1}}}",
			wantKept: []string{"spec.replicas", "spec.port", "spec.extra.anything.deep", "metadata.name"},
		},
		{
			name:      "unknown fields at the root, in spec and in list items",
			obj:       meta + "foo: 1\nspec: {bar: 2, ports: [{name: a, port: 1, baz: 3}]}",
			wantPaths: []string{"foo", "spec.bar", "spec.ports[0].baz"},
			wantGone:  []string{"foo", "spec.bar"},
			wantKept:  []string{"spec.ports"},
		},
		{
			name:      "unknown metadata field",
			obj:       "metadata: {name: w, namespace: default, colour: red}",
			wantPaths: []string{"metadata.colour"},
			wantGone:  []string{"metadata.colour"},
			wantKept:  []string{"metadata.name", "metadata.namespace"},
		},
		{
			name:      "embedded resource: its type meta and metadata are kept, unknown fields go",
			obj:       meta + "spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p, shade: dark}, spec: {image: x, tag: y}}}",
			wantPaths: []string{"spec.template.spec.tag", "spec.template.metadata.shade"},
			wantGone:  []string{"spec.template.spec.tag", "spec.template.metadata.shade"},
			wantKept:  []string{"spec.template.apiVersion", "spec.template.kind", "spec.template.metadata.name", "spec.template.spec.image"},
		},
		{
			name:     "nulls: dropped without a default, kept for defaulting with one",
			obj:      meta + "spec: {color: null, builtAt: null}",
			wantGone: []string{"spec.builtAt"},
			wantKept: []string{"spec.color"},
		},
		{
			name:      "status is pruned too",
			obj:       meta + "status: {replicas: 1, mood: ok}",
			wantPaths: []string{"status.mood"},
			wantGone:  []string{"status.mood"},
			wantKept:  []string{"status.replicas"},
		},
	}
	res := widgets(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, "apiVersion: example.com/v1\nkind: Widget\n"+tt.obj)
			paths := res.Prune(obj)
			if !reflect.DeepEqual(paths, tt.wantPaths) {
				t.Errorf("Prune() = %q, want %q", paths, tt.wantPaths)
			}
			for _, p := range tt.wantGone {
				if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(p, ".")...); found {
					t.Errorf("%s is still there", p)
				}
			}
			for _, p := range tt.wantKept {
				if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(p, ".")...); !found {
					t.Errorf("%s was dropped", p)
				}
			}
			if obj.GetAPIVersion() != "example.com/v1" || obj.GetKind() != "Widget" {
				t.Errorf("type meta = %s %s, want example.com/v1 Widget", obj.GetAPIVersion(), obj.GetKind())
			}
		})
	}
}

// Malformed metadata is dropped by Prune (as upstream reading storage) and
// reported by CheckMetadata (as upstream decoding a request).
func TestMalformedMetadata(t *testing.T) {
	res := widgets(t, "v1")
	obj := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, labels: 5}\n")
	if err := CheckMetadata(obj); err == nil {
		t.Error("CheckMetadata(labels: 5) = nil, want an error")
	}
	res.Prune(obj)
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "labels"); found {
		t.Error("Prune kept labels: 5")
	}
	if obj.GetName() != "w" {
		t.Errorf("name = %q after Prune, want w", obj.GetName())
	}
	if err := CheckMetadata(widget(t, "{replicas: 1}", "")); err != nil {
		t.Errorf("CheckMetadata(valid) = %v", err)
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want map[string]interface{}
	}{
		{
			name: "empty spec gets every default",
			spec: "{}",
			want: map[string]interface{}{"replicas": int64(1), "maxReplicas": int64(10), "color": "blue"},
		},
		{
			name: "set values stay; a null takes the default",
			spec: "{replicas: 4, color: null}",
			want: map[string]interface{}{"replicas": int64(4), "maxReplicas": int64(10), "color": "blue"},
		},
	}
	res := widgets(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := widget(t, tt.spec, "")
			res.Prune(obj)
			res.Default(obj)
			if got := obj.Object["spec"]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec = %v, want %v", got, tt.want)
			}
		})
	}
}
