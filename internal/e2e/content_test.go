package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const protobufCT = "application/vnd.kubernetes.protobuf"

var protoSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// TestContentTypes: the API reads and writes JSON, YAML and protobuf, and
// answers Table for server-side printing, as upstream does.
func TestContentTypes(t *testing.T) {
	s := StartServer(t)
	c := s.Admin(t)
	url := s.URL() + cms

	yamlBody := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
	r := c.Do(t, "POST", url, []byte(yamlBody), map[string]string{"Content-Type": "application/yaml", "Accept": "application/yaml"})
	var got corev1.ConfigMap
	if r.Code != 201 || r.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("POST YAML, Accept YAML: %s (Content-Type %q), want 201 application/yaml", r.describe(), r.Header.Get("Content-Type"))
	}
	if err := yaml.UnmarshalStrict(r.Body, &got); err != nil || got.Name != "from-yaml" || got.Data["k"] != "v" || got.Kind != "ConfigMap" || got.UID == "" {
		t.Errorf("YAML answer to a YAML create: %v %+v", err, got)
	}

	t.Run("GET YAML", func(t *testing.T) {
		r := c.Do(t, "GET", url+"/from-yaml", nil, map[string]string{"Accept": "application/yaml"})
		var cm corev1.ConfigMap
		if r.Code != 200 || r.Header.Get("Content-Type") != "application/yaml" {
			t.Fatalf("GET Accept YAML: %s (Content-Type %q)", r.describe(), r.Header.Get("Content-Type"))
		}
		if err := yaml.UnmarshalStrict(r.Body, &cm); err != nil || cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Data["k"] != "v" {
			t.Errorf("YAML GET: %v %+v\n%s", err, cm, r.Body)
		}
	})

	t.Run("protobuf in and out", func(t *testing.T) {
		var body bytes.Buffer
		in := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "from-proto"}, Data: map[string]string{"p": "b"}}
		if err := protoSerializer.Encode(in, &body); err != nil {
			t.Fatal(err)
		}
		r := c.Do(t, "POST", url, body.Bytes(), map[string]string{"Content-Type": protobufCT, "Accept": protobufCT})
		if r.Code != 201 {
			t.Fatalf("POST protobuf: %s", r.describe())
		}
		created := decodeProto(t, r).(*corev1.ConfigMap)
		if created.Name != "from-proto" || created.UID == "" || created.Data["p"] != "b" {
			t.Errorf("protobuf create answered %+v", created)
		}
		r = c.Do(t, "GET", url+"/from-yaml", nil, map[string]string{"Accept": protobufCT})
		if cm, ok := decodeProto(t, r).(*corev1.ConfigMap); !ok || cm.Name != "from-yaml" || cm.Data["k"] != "v" {
			t.Errorf("GET protobuf: %#v", cm)
		}
		r = c.Do(t, "GET", url, nil, map[string]string{"Accept": protobufCT})
		list, ok := decodeProto(t, r).(*corev1.ConfigMapList)
		if !ok || len(withoutRootCA(list.Items)) != 2 || list.ResourceVersion == "" {
			t.Errorf("LIST protobuf: %#v", list)
		}
		// Errors are a Status in protobuf too when only protobuf is accepted.
		r = c.Do(t, "GET", url+"/nosuch", nil, map[string]string{"Accept": protobufCT})
		if st, ok := decodeProto(t, r).(*metav1.Status); !ok || r.Code != 404 || st.Reason != metav1.StatusReasonNotFound {
			t.Errorf("GET missing, Accept protobuf: HTTP %d %#v", r.Code, st)
		}
	})

	t.Run("Table", func(t *testing.T) {
		r := c.Do(t, "GET", url, nil, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
		var tb metav1.Table
		if err := json.Unmarshal(r.Body, &tb); r.Code != 200 || err != nil {
			t.Fatalf("GET as Table: %s %v", r.describe(), err)
		}
		var cols []string
		for _, c := range tb.ColumnDefinitions {
			cols = append(cols, c.Name)
		}
		rows := 0
		for _, row := range tb.Rows {
			if len(row.Cells) > 0 && row.Cells[0] != rootCAConfigMap {
				rows++
			}
		}
		if tb.Kind != "Table" || strings.Join(cols, " ") != "Name Data Age" || rows != 2 {
			t.Errorf("Table kind %q columns %q rows %d (besides %s), want Table, Name Data Age, 2", tb.Kind, cols, rows, rootCAConfigMap)
		}
	})

	t.Run("not acceptable", func(t *testing.T) {
		r := c.Do(t, "GET", url+"/from-yaml", nil, map[string]string{"Accept": "text/html"})
		expectStatus(t, "GET Accept text/html", r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	})

	t.Run("managedFields from the user agent", func(t *testing.T) {
		// With no ?fieldManager upstream names the manager after the
		// User-Agent up to its first "/".
		// An object with no fields beyond its name gets no entry (as upstream), so give it data.
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-agent"},"data":{"k":"v"}}`
		r := c.Do(t, "POST", url, []byte(body), map[string]string{"Content-Type": jsonCT, "User-Agent": "e2e-agent/1.0 (linux)"})
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(r.Body, &obj); r.Code != 201 || err != nil {
			t.Fatalf("POST: %s %v", r.describe(), err)
		}
		if len(obj.ManagedFields) != 1 || obj.ManagedFields[0].Manager != "e2e-agent" || obj.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("managedFields %+v, want one Update entry by e2e-agent", obj.ManagedFields)
		}
	})
}

// decodeProto decodes a protobuf response (magic "k8s\0" + runtime.Unknown).
func decodeProto(t *testing.T, r response) runtime.Object {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != protobufCT {
		t.Fatalf("Content-Type %q, want %s: %s", ct, protobufCT, r.describe())
	}
	obj, _, err := protoSerializer.Decode(r.Body, nil, nil)
	if err != nil {
		t.Fatalf("decode protobuf: %v", err)
	}
	return obj
}

// rootCAConfigMap is in every namespace, as upstream's: a controller
// publishes it, so a test cannot know whether it is there yet.
const rootCAConfigMap = "kube-root-ca.crt"

// withoutRootCA is items without the rootCAConfigMap.
func withoutRootCA(items []corev1.ConfigMap) []corev1.ConfigMap {
	var out []corev1.ConfigMap
	for _, cm := range items {
		if cm.Name != rootCAConfigMap {
			out = append(out, cm)
		}
	}
	return out
}
