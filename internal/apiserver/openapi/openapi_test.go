package openapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func res(gvk schema.GroupVersionKind, resource string, namespaced bool, obj, list any, subresources ...string) Resource {
	return Resource{
		GVK: gvk, ListKind: gvk.Kind + "List", Resource: resource, Namespaced: namespaced,
		Type: reflect.TypeOf(obj), ListType: reflect.TypeOf(list), Subresources: subresources, Verbs: allVerbs,
	}
}

// testResources is a small cluster's worth of resources.
func testResources() []Resource {
	core := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	return []Resource{
		res(core.WithKind("Pod"), "pods", true, corev1.Pod{}, corev1.PodList{}, "status", "log"),
		res(core.WithKind("Service"), "services", true, corev1.Service{}, corev1.ServiceList{}, "status"),
		res(core.WithKind("ConfigMap"), "configmaps", true, corev1.ConfigMap{}, corev1.ConfigMapList{}),
		res(core.WithKind("Namespace"), "namespaces", false, corev1.Namespace{}, corev1.NamespaceList{}, "status"),
		res(core.WithKind("Node"), "nodes", false, corev1.Node{}, corev1.NodeList{}, "status"),
		res(apps.WithKind("Deployment"), "deployments", true, appsv1.Deployment{}, appsv1.DeploymentList{}, "status", "scale"),
		res(apps.WithKind("ReplicaSet"), "replicasets", true, appsv1.ReplicaSet{}, appsv1.ReplicaSetList{}, "status", "scale"),
		res(apps.WithKind("DaemonSet"), "daemonsets", true, appsv1.DaemonSet{}, appsv1.DaemonSetList{}, "status"),
		res(batchv1.SchemeGroupVersion.WithKind("Job"), "jobs", true, batchv1.Job{}, batchv1.JobList{}, "status"),
		res(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "clusterroles", false, rbacv1.ClusterRole{}, rbacv1.ClusterRoleList{}),
	}
}

func mustBuild(t *testing.T) *Documents {
	t.Helper()
	docs, err := Build(testResources())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return docs
}

// everyKnownResource is a resource for every kind client-go knows.
func everyKnownResource(t testing.TB) []Resource {
	known := scheme.Scheme.AllKnownTypes()
	var resources []Resource
	for gvk, typ := range known {
		list, ok := known[gvk.GroupVersion().WithKind(gvk.Kind+"List")]
		if !ok || gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resources = append(resources, Resource{
			GVK: gvk, ListKind: gvk.Kind + "List", Resource: plural.Resource, Namespaced: true,
			Type: typ, ListType: list, Subresources: []string{"status"}, Verbs: allVerbs,
		})
	}
	if len(resources) < 100 {
		t.Fatalf("only %d resources found in client-go's scheme", len(resources))
	}
	return resources
}

// TestBuildEveryKnownType builds the documents of every kind client-go knows,
// so no built-in type has a Go shape the generator cannot describe.
func TestBuildEveryKnownType(t *testing.T) {
	resources := everyKnownResource(t)
	docs, err := Build(resources)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	var root struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	if err := json.Unmarshal(docs.V3Root(), &root); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1"} {
		if !strings.HasPrefix(root.Paths[want].ServerRelativeURL, "/openapi/v3/"+want+"?hash=") {
			t.Errorf("v3 root has no %s: %v", want, root.Paths[want])
		}
	}
	if _, err := docs.V2Proto(); err != nil {
		t.Errorf("V2Proto: %v", err)
	}
	t.Logf("%d resources, v2 document %d bytes, %d definitions", len(resources), len(docs.V2JSON()), len(docs.Definitions()))
}

// definition returns a definition of the v2 document or of a v3 document as generic JSON.
func definition(t *testing.T, docs *Documents, gvPath, name string) map[string]any {
	t.Helper()
	var doc struct {
		Definitions map[string]map[string]any
		Components  struct{ Schemas map[string]map[string]any }
	}
	data := docs.V2JSON()
	if gvPath != "" {
		var ok bool
		if data, ok = docs.V3(gvPath); !ok {
			t.Fatalf("no v3 document for %s", gvPath)
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	def := doc.Definitions[name]
	if gvPath != "" {
		def = doc.Components.Schemas[name]
	}
	if def == nil {
		t.Fatalf("no definition %s", name)
	}
	return def
}

func property(t *testing.T, def map[string]any, path ...string) map[string]any {
	t.Helper()
	props, _ := def["properties"].(map[string]any)
	p, _ := props[path[0]].(map[string]any)
	if p == nil {
		t.Fatalf("no property %q", path[0])
	}
	if len(path) > 1 {
		return property(t, p, path[1:]...)
	}
	return p
}

func toJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestSchemasMatchUpstream compares pieces of the output with what upstream's
// api/openapi-spec documents say for the same types.
func TestSchemasMatchUpstream(t *testing.T) {
	docs := mustBuild(t)
	const meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
	for _, tc := range []struct {
		gvPath, def string
		path        []string // property path; empty: the definition itself
		key, want   string   // key of the (property) schema and its JSON
	}{
		// Extensions from comment markers and patch tags.
		{"", "io.k8s.api.core.v1.Container", []string{"ports"}, "x-kubernetes-list-map-keys", `["containerPort","protocol"]`},
		{"", "io.k8s.api.core.v1.Container", []string{"ports"}, "x-kubernetes-list-type", `"map"`},
		{"", "io.k8s.api.core.v1.Container", []string{"ports"}, "x-kubernetes-patch-merge-key", `"containerPort"`},
		{"", "io.k8s.api.core.v1.Container", []string{"args"}, "x-kubernetes-list-type", `"atomic"`},
		{"", "io.k8s.api.core.v1.PodSpec", []string{"containers"}, "x-kubernetes-list-map-keys", `["name"]`},
		{"", "io.k8s.api.core.v1.PodSpec", []string{"containers"}, "x-kubernetes-patch-strategy", `"merge"`},
		{"", "io.k8s.api.core.v1.ServiceSpec", []string{"ports"}, "x-kubernetes-list-map-keys", `["port","protocol"]`},
		{"", meta + "ObjectMeta", []string{"finalizers"}, "x-kubernetes-list-type", `"set"`},
		{"", meta + "ObjectMeta", []string{"finalizers"}, "x-kubernetes-patch-strategy", `"merge"`},
		{"", meta + "ObjectMeta", []string{"ownerReferences"}, "x-kubernetes-list-map-keys", `["uid"]`},
		{"", meta + "ObjectMeta", []string{"managedFields"}, "x-kubernetes-list-type", `"atomic"`},
		{"", meta + "OwnerReference", nil, "x-kubernetes-map-type", `"atomic"`},
		{"", meta + "LabelSelector", nil, "x-kubernetes-map-type", `"atomic"`},
		{"", "io.k8s.api.apps.v1.DaemonSetStatus", []string{"conditions"}, "x-kubernetes-list-map-keys", `["type"]`},
		// Required fields, types and formats.
		{"", meta + "OwnerReference", nil, "required", `["apiVersion","kind","name","uid"]`},
		{"", "io.k8s.api.apps.v1.DeploymentSpec", nil, "required", `["selector","template"]`},
		{"", "io.k8s.api.core.v1.Container", nil, "required", `["name"]`},
		{"", "io.k8s.api.apps.v1.DeploymentList", nil, "required", `["items"]`},
		{"", "io.k8s.api.apps.v1.DeploymentSpec", []string{"replicas"}, "format", `"int32"`},
		{"", meta + "ObjectMeta", []string{"generation"}, "format", `"int64"`},
		{"", meta + "Time", nil, "format", `"date-time"`},
		{"", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", nil, "format", `"int-or-string"`},
		{"", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", nil, "type", `"string"`},
		{"", "io.k8s.apimachinery.pkg.api.resource.Quantity", nil, "type", `"string"`},
		{"", "io.k8s.api.core.v1.ResourceRequirements", []string{"limits", "additionalProperties"}, "$ref", `"#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"`},
		{"", "io.k8s.api.core.v1.ConfigMap", []string{"binaryData", "additionalProperties"}, "format", `"byte"`},
		{"", "io.k8s.api.apps.v1.Deployment", []string{"metadata"}, "$ref", `"#/definitions/` + meta + `ObjectMeta"`},
		{"", "io.k8s.api.apps.v1.Deployment", nil, "x-kubernetes-group-version-kind", `[{"group":"apps","kind":"Deployment","version":"v1"}]`},
		{"", meta + "Status", nil, "x-kubernetes-group-version-kind", `[{"group":"","kind":"Status","version":"v1"}]`},
		{"", "io.k8s.apimachinery.pkg.runtime.RawExtension", nil, "type", `"object"`},
		{"", meta + "FieldsV1", nil, "type", `"object"`},
		// v3: allOf around $ref with siblings, enforced defaults, oneOf types.
		{"apis/apps/v1", "io.k8s.api.apps.v1.Deployment", []string{"metadata"}, "allOf", `[{"$ref":"#/components/schemas/` + meta + `ObjectMeta"}]`},
		{"apis/apps/v1", "io.k8s.api.apps.v1.Deployment", []string{"metadata"}, "default", `{}`},
		{"apis/apps/v1", meta + "ObjectMeta", []string{"finalizers", "items"}, "default", `""`},
		{"apis/apps/v1", meta + "ObjectMeta", []string{"labels", "additionalProperties"}, "default", `""`},
		{"apis/apps/v1", meta + "ObjectMeta", []string{"ownerReferences", "items"}, "default", `{}`},
		{"apis/apps/v1", meta + "OwnerReference", []string{"uid"}, "default", `""`},
		{"apis/apps/v1", "io.k8s.api.apps.v1.DaemonSetStatus", []string{"currentNumberScheduled"}, "default", `0`},
		{"apis/apps/v1", "io.k8s.apimachinery.pkg.util.intstr.IntOrString", nil, "oneOf", `[{"type":"integer"},{"type":"string"}]`},
		{"apis/apps/v1", "io.k8s.apimachinery.pkg.api.resource.Quantity", nil, "oneOf", `[{"type":"string"},{"type":"number"}]`},
		{"apis/apps/v1", "io.k8s.api.autoscaling.v1.Scale", nil, "x-kubernetes-group-version-kind", `[{"group":"autoscaling","kind":"Scale","version":"v1"}]`},
	} {
		def := definition(t, docs, tc.gvPath, tc.def)
		s := def
		if len(tc.path) > 0 {
			if tc.path[len(tc.path)-1] == "items" || tc.path[len(tc.path)-1] == "additionalProperties" {
				s = property(t, def, tc.path[:len(tc.path)-1]...)[tc.path[len(tc.path)-1]].(map[string]any)
			} else {
				s = property(t, def, tc.path...)
			}
		}
		if got := toJSON(s[tc.key]); got != tc.want {
			t.Errorf("%s %s %v %s = %s, want %s", tc.gvPath, tc.def, tc.path, tc.key, got, tc.want)
		}
	}

	// Descriptions come from SwaggerDoc.
	strategy := property(t, definition(t, docs, "", "io.k8s.api.apps.v1.DeploymentSpec"), "strategy")
	if d, _ := strategy["description"].(string); !strings.Contains(d, "replace existing pods") {
		t.Errorf("spec.strategy description = %q", d)
	}
	// Upstream leaves Deployment without required fields but Deployment.spec is +required in 1.37.
	if got := toJSON(definition(t, docs, "", "io.k8s.api.apps.v1.Deployment")["required"]); got != `["spec"]` {
		t.Errorf("Deployment required = %s", got)
	}
	// v2 has no defaults; v3 holds only the schemas its paths reach.
	if strings.Contains(string(docs.V2JSON()), `"default"`) {
		t.Error("the v2 document has defaults; upstream prunes them")
	}
	apps, _ := docs.V3("apis/apps/v1")
	if strings.Contains(string(apps), "io.k8s.api.rbac.v1.ClusterRole") {
		t.Error("the apps/v1 document holds rbac schemas")
	}
}

// TestPaths checks the operations kubectl looks at.
func TestPaths(t *testing.T) {
	docs := mustBuild(t)
	data, _ := docs.V3("apis/apps/v1")
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, want := range []string{
		"/apis/apps/v1/",
		"/apis/apps/v1/deployments",
		"/apis/apps/v1/namespaces/{namespace}/deployments",
		"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
		"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
		"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status",
		"/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}",
	} {
		if _, ok := doc.Paths[want]; !ok {
			t.Errorf("no path %s in %v", want, paths)
		}
	}
	var patch struct {
		OperationID string            `json:"operationId"`
		Action      string            `json:"x-kubernetes-action"`
		GVK         map[string]string `json:"x-kubernetes-group-version-kind"`
		Parameters  []struct{ Name, In string }
		RequestBody struct{ Content map[string]any }
	}
	if err := json.Unmarshal(doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"], &patch); err != nil {
		t.Fatal(err)
	}
	var params []string
	for _, p := range patch.Parameters {
		params = append(params, p.In+":"+p.Name)
	}
	if patch.OperationID != "patchAppsV1NamespacedDeployment" || patch.Action != "patch" || patch.GVK["kind"] != "Deployment" ||
		strings.Join(params, ",") != "query:dryRun,query:fieldManager,query:fieldValidation,query:force" ||
		patch.RequestBody.Content["application/strategic-merge-patch+json"] == nil ||
		patch.RequestBody.Content["application/apply-patch+yaml"] == nil {
		t.Errorf("deployment patch operation = %+v", patch)
	}
	if _, ok := doc.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/log"]; ok {
		t.Error("unknown subresources must be left out")
	}
	core, _ := docs.V3("api/v1")
	for _, want := range []string{`"listCoreV1Namespace"`, `"readCoreV1NamespacedPodStatus"`, `"listCoreV1PodForAllNamespaces"`, `"/api/v1/nodes/{name}"`} {
		if !strings.Contains(string(core), want) {
			t.Errorf("api/v1 document lacks %s", want)
		}
	}
}

func TestServe(t *testing.T) {
	docs := mustBuild(t)
	srv := httptest.NewServer(docs)
	defer srv.Close()
	get := func(path, accept string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		path, accept string
		code         int
		contentType  string
	}{
		{"/openapi/v2", "", 200, mediaJSON},
		{"/openapi/v2", "application/json", 200, mediaJSON},
		{"/openapi/v2", mediaV2ProtoLegacy, 200, mediaV2Proto},
		{"/openapi/v2", mediaV2Proto + ", application/json", 200, mediaV2Proto},
		{"/openapi/v2", "text/html", 406, ""},
		{"/openapi/v3", "", 200, mediaJSON},
		{"/openapi/v3/apis/apps/v1", "application/json", 200, mediaJSON},
		{"/openapi/v3/apis/apps/v1", mediaV3ProtoLegacy, 200, mediaV3Proto},
		{"/openapi/v3/apis/nope/v1", "", 404, ""},
		{"/openapi/v3/apis/apps/v1?hash=stale", "", 301, ""},
	} {
		resp := get(tc.path, tc.accept)
		if resp.StatusCode != tc.code || (tc.contentType != "" && resp.Header.Get("Content-Type") != tc.contentType) {
			t.Errorf("GET %s (Accept %q) = %d %s, want %d %s", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.contentType)
		}
	}
	first := get("/openapi/v2", mediaV2ProtoLegacy)
	if again := get("/openapi/v2", mediaV2ProtoLegacy, "If-None-Match", first.Header.Get("Etag")); again.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag = %d, want 304", again.StatusCode)
	}
	var root struct {
		Paths map[string]struct{ ServerRelativeURL string }
	}
	_ = json.Unmarshal(docs.V3Root(), &root)
	current := get(root.Paths["apis/apps/v1"].ServerRelativeURL, "application/json")
	if current.StatusCode != 200 || !strings.Contains(current.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("GET with the current hash = %d, Cache-Control %q", current.StatusCode, current.Header.Get("Cache-Control"))
	}
}

// TestMarkersUpToDate regenerates markers_generated.go from the k8s.io/api in
// go.mod and fails when the committed file differs: run `go generate`.
func TestMarkersUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	out := filepath.Join(t.TempDir(), "markers.go")
	cmd := exec.Command("go", "run", "./internal/markergen", "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("markergen: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("markers_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Error("markers_generated.go is stale: run go generate ./internal/apiserver/openapi/")
	}
}
