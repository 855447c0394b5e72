package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/util/proto"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	"sigs.k8s.io/yaml"
)

// fooCRD is the CRD of g/v1 and g/v2 Foo (v0 is not served). Its spec
// nests objects and has a list-map, a set and a field that keeps unknown
// fields; v1 has the status and scale subresources.
const fooCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.g}
spec:
  group: g
  scope: Namespaced
  names: {kind: Foo, listKind: FooList, plural: foos, singular: foo}
  versions:
  - name: v0
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object}}
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        description: A Foo is a test kind.
        properties:
          spec:
            type: object
            description: What the Foo should be.
            properties:
              replicas: {type: integer, format: int32}
              ports:
                type: array
                description: The ports of the Foo, one per name.
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              template:
                type: object
                properties:
                  nested:
                    type: object
                    properties:
                      deep: {type: string, description: Deep down.}
              config:
                type: object
                x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            properties:
              replicas: {type: integer}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func crdFrom(t testing.TB, text string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(text), crd); err != nil {
		t.Fatalf("parsing the CRD: %v", err)
	}
	return crd
}

// renamed returns a copy of the Foo CRD as group, kind and plural.
func renamed(t testing.TB, group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	crd := crdFrom(t, fooCRD)
	crd.Name = plural + "." + group
	crd.Spec.Group = group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)}
	return crd
}

// snapshot is every document of docs.
func snapshot(docs *Documents) map[string][]byte {
	out := map[string][]byte{"v2": docs.V2JSON(), "v3": docs.V3Root()}
	for p, doc := range docs.v3 {
		out[p] = doc.json
	}
	return out
}

func v2Doc(t *testing.T, docs *Documents) (defs map[string]map[string]any, paths map[string]map[string]any) {
	t.Helper()
	var doc struct {
		Definitions map[string]map[string]any
		Paths       map[string]map[string]any
	}
	if err := json.Unmarshal(docs.V2JSON(), &doc); err != nil {
		t.Fatalf("the v2 document is not JSON: %v", err)
	}
	return doc.Definitions, doc.Paths
}

func v3RootURLs(t *testing.T, docs *Documents) map[string]string {
	t.Helper()
	var root struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	if err := json.Unmarshal(docs.V3Root(), &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for p, v := range root.Paths {
		out[p] = v.ServerRelativeURL
	}
	return out
}

func TestWithCRDs(t *testing.T) {
	docs := mustBuild(t)
	before := snapshot(docs)
	crd := crdFrom(t, fooCRD)
	out, err := docs.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{crd})
	if err != nil {
		t.Fatalf("WithCRDs: %v", err)
	}

	// d is unchanged; the built-in v3 documents are the same bytes.
	for name, data := range snapshot(docs) {
		if !bytes.Equal(data, before[name]) {
			t.Errorf("WithCRDs changed the receiver's %s document", name)
		}
	}
	for p := range docs.v3 {
		if got, _ := out.V3(p); !bytes.Equal(got, before[p]) {
			t.Errorf("built-in document %s changed", p)
		}
	}

	// v2: the served versions' definitions and paths, next to the built-in ones.
	defs, paths := v2Doc(t, out)
	for _, name := range []string{"g.v1.Foo", "g.v1.FooList", "g.v2.Foo", "g.v2.FooList", "io.k8s.api.apps.v1.Deployment", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"} {
		if defs[name] == nil {
			t.Errorf("v2 has no definition %s", name)
		}
	}
	if defs["g.v0.Foo"] != nil {
		t.Error("v2 has the definition of a version that is not served")
	}
	for _, p := range []string{
		"/apis/g/v1/foos",
		"/apis/g/v1/namespaces/{namespace}/foos",
		"/apis/g/v1/namespaces/{namespace}/foos/{name}",
		"/apis/g/v1/namespaces/{namespace}/foos/{name}/status",
		"/apis/g/v1/namespaces/{namespace}/foos/{name}/scale",
		"/apis/g/v2/namespaces/{namespace}/foos/{name}",
		"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
	} {
		if paths[p] == nil {
			t.Errorf("v2 has no path %s", p)
		}
	}
	if paths["/apis/g/v2/namespaces/{namespace}/foos/{name}/status"] != nil {
		t.Error("v2 has a status path for a version without the subresource")
	}
	if got := toJSON(property(t, defs["g.v1.Foo"], "spec", "ports")["x-kubernetes-list-map-keys"]); got != `["name"]` {
		t.Errorf("v2 g.v1.Foo spec.ports list-map keys = %s", got)
	}
	// Every definition appears once: the CRDs' copies of ObjectMeta are left out.
	if n := bytes.Count(out.V2JSON(), []byte(`"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{`)); n != 1 {
		t.Errorf("ObjectMeta is defined %d times in v2", n)
	}
	if _, err := out.V2Proto(); err != nil {
		t.Errorf("V2Proto: %v", err)
	}

	// v3: a document per custom group version, with the x-kubernetes extensions.
	urls := v3RootURLs(t, out)
	for _, p := range []string{"apis/g/v1", "apis/g/v2", "apis/apps/v1", "api/v1"} {
		if !strings.HasPrefix(urls[p], "/openapi/v3/"+p+"?hash=") {
			t.Errorf("v3 root has no %s: %q", p, urls[p])
		}
	}
	if _, ok := urls["apis/g/v0"]; ok {
		t.Error("v3 root lists a version that is not served")
	}
	if urls["apis/apps/v1"] != v3RootURLs(t, docs)["apis/apps/v1"] {
		t.Error("the built-in apps/v1 hash changed")
	}
	foo := definition(t, out, "apis/g/v1", "g.v1.Foo")
	spec := property(t, foo, "spec")
	for _, tc := range []struct {
		schema    map[string]any
		key, want string
	}{
		{property(t, spec, "ports"), "x-kubernetes-list-type", `"map"`},
		{property(t, spec, "ports"), "x-kubernetes-list-map-keys", `["name"]`},
		{property(t, spec, "tags"), "x-kubernetes-list-type", `"set"`},
		{property(t, spec, "config"), "x-kubernetes-preserve-unknown-fields", `true`},
		{property(t, spec, "template", "nested", "deep"), "description", `"Deep down."`},
		{foo, "x-kubernetes-group-version-kind", `[{"group":"g","kind":"Foo","version":"v1"}]`},
		{property(t, foo, "metadata"), "allOf", `[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]`},
	} {
		if got := toJSON(tc.schema[tc.key]); got != tc.want {
			t.Errorf("v3 g.v1.Foo: %s = %s, want %s", tc.key, got, tc.want)
		}
	}
	definition(t, out, "apis/g/v1", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
	definition(t, out, "apis/g/v2", "g.v2.Foo")
	if v1, _ := out.V3("apis/g/v1"); bytes.Contains(v1, []byte("g.v2.Foo")) {
		t.Error("the g/v1 document holds g/v2 schemas")
	}

	// Building again gives the same documents; a changed CRD changes only its hashes.
	again, err := docs.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{crd})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.V3Root(), out.V3Root()) || !bytes.Equal(again.V2JSON(), out.V2JSON()) {
		t.Error("WithCRDs is not deterministic")
	}
	changed := crd.DeepCopy()
	changed.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["template"].Properties["nested"].Properties["deep"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	after, err := out.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{changed})
	if err != nil {
		t.Fatal(err)
	}
	afterURLs := v3RootURLs(t, after)
	if afterURLs["apis/g/v1"] == urls["apis/g/v1"] {
		t.Error("the g/v1 hash did not change with its schema")
	}
	if afterURLs["apis/g/v2"] != urls["apis/g/v2"] || afterURLs["apis/apps/v1"] != urls["apis/apps/v1"] {
		t.Error("hashes of unchanged group versions changed")
	}

	// Extending a result reuses the documents of unchanged CRDs and rebuilds
	// a group version's document when its CRDs change.
	if reused, _ := after.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{changed}); reused.v3["apis/g/v1"] != after.v3["apis/g/v1"] {
		t.Error("the document of an unchanged CRD was rebuilt")
	}
	bars := renamed(t, "g", "Bar", "bars")
	both, err := after.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{changed, bars})
	if err != nil {
		t.Fatal(err)
	}
	definition(t, both, "apis/g/v1", "g.v1.Foo")
	definition(t, both, "apis/g/v1", "g.v1.Bar")
	if defs, _ := v2Doc(t, both); defs["g.v1.Foo"] == nil || defs["g.v1.Bar"] == nil {
		t.Error("v2 lacks Foo or Bar")
	}
	if property(t, definition(t, both, "apis/g/v1", "g.v1.Foo"), "spec", "template", "nested", "deep")["type"] != "integer" {
		t.Error("the g/v1 document has the Foo of before the change")
	}

	// No CRDs: the built-in documents again, whichever Documents is extended.
	none, err := after.WithCRDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range snapshot(none) {
		if !bytes.Equal(data, before[name]) {
			t.Errorf("without CRDs the %s document differs from the built-in one", name)
		}
	}
}

// TestWithCRDsConflicts: built-in documents win; a CRD that cannot be
// merged is left out and named in the error.
func TestWithCRDsConflicts(t *testing.T) {
	docs := mustBuild(t)
	builtInApps, _ := docs.V3("apis/apps/v1")

	widgets := renamed(t, "apps", "Widget", "widgets")        // a custom kind in a built-in group version
	deployments := renamed(t, "apps", "Thing", "deployments") // and one with a built-in resource name
	twin := renamed(t, "g", "Foo", "foos")                    // Foo again, under another name
	twin.Name = "zfoos.g"
	out, err := docs.WithCRDs([]*apiextensionsv1.CustomResourceDefinition{widgets, deployments, crdFrom(t, fooCRD), twin, {}})
	if err == nil || !strings.Contains(err.Error(), `"zfoos.g"`) || !strings.Contains(err.Error(), "spec.names.kind") {
		t.Errorf("err = %v, want errors naming zfoos.g and the CRD without names", err)
	}
	if out == nil {
		t.Fatal("WithCRDs returned no documents")
	}
	if apps, _ := out.V3("apis/apps/v1"); !bytes.Equal(apps, builtInApps) {
		t.Error("a CRD replaced the built-in apps/v1 document")
	}
	if _, ok := out.V3("apis/g/v1"); !ok {
		t.Error("the first Foo CRD was left out too")
	}
	_, paths := v2Doc(t, out)
	if paths["/apis/apps/v1/namespaces/{namespace}/widgets/{name}"] == nil {
		t.Error("v2 lacks the paths of a CRD in a built-in group version")
	}
	get, _ := paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["get"].(map[string]any)
	if gvk, _ := get["x-kubernetes-group-version-kind"].(map[string]any); gvk["kind"] != "Deployment" {
		t.Errorf("a CRD took over the deployments path: %v", gvk)
	}
}

// TestCRDConsumers runs kubectl's consumers of the documents on a custom resource.
func TestCRDConsumers(t *testing.T) {
	docs, err := mustBuild(t).WithCRDs([]*apiextensionsv1.CustomResourceDefinition{crdFrom(t, fooCRD)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(docs)
	t.Cleanup(srv.Close)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	// kubectl explain foo.spec (OpenAPI v3).
	var out bytes.Buffer
	gvr := schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "foos"}
	if err := explainv2.PrintModelDescription([]string{"spec"}, &out, dc.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatalf("explain foo.spec: %v", err)
	}
	for _, want := range []string{"KIND:       Foo", "VERSION:    v1", "FIELD: spec <Object>", "What the Foo should be.", "ports\t<[]Object>", "tags\t<[]string>"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain foo.spec lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := explainv2.PrintModelDescription([]string{"spec", "template", "nested", "deep"}, &out, dc.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatalf("explain foo.spec.template.nested.deep: %v", err)
	}
	if !strings.Contains(out.String(), "Deep down.") {
		t.Errorf("explain foo.spec.template.nested.deep:\n%s", out.String())
	}

	// The v2 protobuf parses into kubectl's models with the CRD's kinds.
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("proto.NewOpenAPIData: %v", err)
	}
	foo := models.LookupModel("g.v1.Foo")
	if foo == nil {
		t.Fatal("no g.v1.Foo model")
	}
	ports, ok := kindField(t, kindField(t, foo, "spec"), "ports").(*proto.Array)
	if !ok || ports.GetExtensions()["x-kubernetes-list-type"] != "map" {
		t.Errorf("v2 model spec.ports = %#v", kindField(t, kindField(t, foo, "spec"), "ports"))
	}
}

// BenchmarkWithCRDs extends the documents of every kind client-go knows
// with 1 and 20 two-version CRDs: all built afresh, and after a change to
// one of them (extending the previous result).
func BenchmarkWithCRDs(b *testing.B) {
	docs, err := Build(everyKnownResource(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 20} {
		var crds []*apiextensionsv1.CustomResourceDefinition
		for i := 0; i < n; i++ {
			crds = append(crds, renamed(b, fmt.Sprintf("g%d.example.com", i), "Foo", "foos"))
		}
		b.Run(fmt.Sprintf("fresh/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := docs.WithCRDs(crds); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("one-changed/%d", n), func(b *testing.B) {
			prev, err := docs.WithCRDs(crds)
			if err != nil {
				b.Fatal(err)
			}
			changed := slices.Clone(crds)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				changed[0] = changed[0].DeepCopy()
				changed[0].Spec.Versions[1].Schema.OpenAPIV3Schema.Description = fmt.Sprint("change ", i)
				next, err := prev.WithCRDs(changed)
				if err != nil {
					b.Fatal(err)
				}
				prev = next
			}
		})
	}
}
