package openapi

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
)

var fooGVK = schema.GroupVersionKind{Group: "g", Version: "v1", Kind: "Foo"}

func foo(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "g/v1", "kind": "Foo",
		"metadata": map[string]any{"name": "x", "namespace": "default"},
		"spec":     spec,
	}}
}

// applyTwice applies two managers' ports and tags through a server-side
// apply field manager and returns the live spec.
func applyTwice(t *testing.T, converter managedfields.TypeConverter) (map[string]any, error) {
	t.Helper()
	m := managedfieldstest.NewTestFieldManager(converter, fooGVK)
	if err := m.Apply(foo(map[string]any{"ports": []any{map[string]any{"name": "a", "port": int64(1)}}, "tags": []any{"x"}}), "alice", false); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	if err := m.Apply(foo(map[string]any{"ports": []any{map[string]any{"name": "b", "port": int64(2)}}, "tags": []any{"y"}}), "bob", false); err != nil {
		return nil, err
	}
	spec, _, _ := unstructured.NestedMap(m.Live().(*unstructured.Unstructured).Object, "spec")
	return spec, nil
}

func TestCRDTypeConverter(t *testing.T) {
	docs := mustBuild(t)
	crd := crdFrom(t, fooCRD)
	converter, err := docs.CRDTypeConverter(crd, "v1")
	if err != nil {
		t.Fatalf("CRDTypeConverter: %v", err)
	}

	// A list-map merges per key and a set per value: both managers' entries stay.
	spec, err := applyTwice(t, converter)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if got := toJSON(spec); got != `{"ports":[{"name":"a","port":1},{"name":"b","port":2}],"tags":["x","y"]}` {
		t.Errorf("live spec = %s", got)
	}

	// The field set names list-map entries by key, set entries by value,
	// metadata by ObjectMeta's own types; unknown fields only where the schema keeps them.
	typed, err := converter.ObjectToTyped(foo(map[string]any{
		"ports":  []any{map[string]any{"name": "a", "port": int64(1)}},
		"tags":   []any{"x"},
		"config": map[string]any{"anything": "goes"},
	}))
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.spec.ports[name="a"].port`, `.spec.tags[="x"]`, `.spec.config.anything`, `.metadata.namespace`} {
		if !strings.Contains(set.String(), want) {
			t.Errorf("field set lacks %s:\n%s", want, set)
		}
	}
	if _, err := converter.ObjectToTyped(foo(map[string]any{"bogus": 1})); err == nil {
		t.Error("a field the schema does not have was accepted")
	}
	twins := foo(map[string]any{"ports": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}})
	if _, err := converter.ObjectToTyped(twins); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("two ports named a: err = %v", err)
	}

	// Other versions are typed too, for managed fields recorded at them.
	v2 := foo(map[string]any{"size": int64(3)})
	v2.SetAPIVersion("g/v2")
	if _, err := converter.ObjectToTyped(v2); err != nil {
		t.Errorf("ObjectToTyped(g/v2 Foo): %v", err)
	}
}

// TestCRDTypeConverterDeduced: without a structural schema every list is
// atomic, so the second manager's ports conflict with the first's.
func TestCRDTypeConverterDeduced(t *testing.T) {
	docs := mustBuild(t)
	crd := crdFrom(t, fooCRD)
	// spec without a type is not structural.
	s := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	s.Type = ""
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = s
	converter, err := docs.CRDTypeConverter(crd, "v1")
	if err != nil {
		t.Fatalf("CRDTypeConverter: %v", err)
	}
	if _, err := applyTwice(t, converter); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Errorf("second apply with deduced types: err = %v, want a conflict on .spec.ports", err)
	}
}

func TestCRDTypeConverterErrors(t *testing.T) {
	docs := mustBuild(t)
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		want    string
	}{
		{"no CRD", nil, "v1", "no CustomResourceDefinition"},
		{"unknown version", crdFrom(t, fooCRD), "v9", `no version "v9"`},
		{"no kind", &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "g"}}, "v1", "spec.names.kind"},
	} {
		if _, err := docs.CRDTypeConverter(tc.crd, tc.version); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkCRDTypeConverter builds the type converter of a two-version CRD
// on the definitions of every kind client-go knows.
func BenchmarkCRDTypeConverter(b *testing.B) {
	docs, err := Build(everyKnownResource(b))
	if err != nil {
		b.Fatal(err)
	}
	crd := crdFrom(b, fooCRD)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := docs.CRDTypeConverter(crd, "v1"); err != nil {
			b.Fatal(err)
		}
	}
}
