package manifests

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		file string
		data string
		want []string // "apiVersion Kind namespace/name" of each object
	}{
		{"multi-document YAML", "app.yaml", `# leading comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
  namespace: ns1
data:
  k: "---not a separator"
---
---   # empty document, then one with only a comment
# nothing here
--- # a separator with a comment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: two
`, []string{"v1 ConfigMap ns1/one", "apps/v1 Deployment /two"}},
		{"JSON object", "a.json", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "kube-system"}, "data": {}}`,
			[]string{"v1 Secret kube-system/s"}},
		{"JSON List", "list.json", `{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "b"}, "value": 10}
  ]
}`, []string{"v1 ConfigMap /a", "scheduling.k8s.io/v1 PriorityClass /b"}},
		{"typed List in YAML beside an object", "l.yml", `apiVersion: v1
kind: ConfigMapList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: x}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns2}
`, []string{"v1 ConfigMap /x", "v1 Namespace /ns2"}},
		{"empty file", "empty.yaml", "", nil},
		{"only comments and separators", "c.yaml", "# hello\n---\n# world\n", nil},
		{"empty List", "l.json", `{"apiVersion": "v1", "kind": "List", "items": []}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse(tt.file, []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseKeepsIntegers(t *testing.T) {
	objs, err := Parse("d.yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := objs[0].Object["spec"].(map[string]any)["replicas"].(int64); !ok || v != 3 {
		t.Errorf("replicas = %#v, want int64 3", objs[0].Object["spec"].(map[string]any)["replicas"])
	}
}

// TestParseErrors: a broken document makes the whole file fail with an
// error naming the file and the line, and no object is returned.
func TestParseErrors(t *testing.T) {
	good := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n---\n" // lines 1-5
	tests := []struct {
		name, file, data string
		want             []string // substrings of the error
	}{
		{"bad YAML in the second document", "app.yaml", good + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n   labels: x\n",
			[]string{"app.yaml:10:", "not valid YAML or JSON", "mapping values are not allowed"}},
		{"tab indentation", "tab.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n",
			[]string{"tab.yaml:4:", "not valid YAML or JSON"}},
		{"bad JSON", "x.json", "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\"\n  \"metadata\": {}\n}",
			[]string{"x.json:3:", "not valid YAML or JSON"}},
		{"no kind", "k.yaml", good + "apiVersion: v1\nmetadata: {name: x}\n", []string{"k.yaml:6:", "no kind"}},
		{"no apiVersion", "a.yaml", "kind: ConfigMap\nmetadata: {name: x}\n", []string{"a.yaml:1:", "no apiVersion"}},
		{"no name", "n.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n", []string{"n.yaml:1:", "ConfigMap has no metadata.name"}},
		{"name not a string", "y.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: y}\n", []string{"y.yaml:1:", "metadata.name true is a boolean, not a string (quote it)"}},
		{"metadata not an object", "m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\n", []string{"metadata is not an object"}},
		{"namespace not a string", "ns.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: [x]}\n", []string{"metadata.namespace is not a string"}},
		{"scalar document", "s.yaml", good + "just a string\n", []string{"s.yaml:6:", "is a string, not an object"}},
		{"top-level JSON array", "arr.json", `[{"apiVersion": "v1"}]`, []string{"arr.json:1:", "is a list, not an object"}},
		{"List item not an object", "l.yaml", "apiVersion: v1\nkind: List\nitems:\n- 5\n", []string{"l.yaml:1:", "List item 0 is a number"}},
		{"List item without a name", "l2.yaml", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n", []string{"List item 0: Pod has no metadata.name"}},
		{"nested List", "l3.yaml", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n", []string{"itself a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse(tt.file, []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; objects %v", objs)
			}
			if objs != nil {
				t.Errorf("objects returned with the error: %v", objs)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not wrap ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and objects come back only
// without an error, each with a kind and a name.
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n---\nx: [\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse("f.yaml", data)
		if err != nil && objs != nil {
			t.Fatalf("objects with an error: %v", err)
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetName() == "" || o.IsList() {
				t.Fatalf("object without kind or name, or a list: %v", o.Object)
			}
		}
	})
}
