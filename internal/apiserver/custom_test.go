package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgetCRD is a namespaced CRD with a schema (a default, an enum, a CEL
// rule), the status and scale subresources and a printer column.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
		"color":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
		"selector": {Type: "string"},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget",
				ListKind: "WidgetList", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: props, XValidations: apiextensionsv1.ValidationRules{{
							Rule: "self.replicas <= 10", Message: "at most ten widgets",
						}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"}, "selector": {Type: "string"}}},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas",
						StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Color", Type: "string", JSONPath: ".spec.color"}},
			}},
		},
	}
}

// establish creates crd and marks it established as the CRD controller
// would (no controller runs here), then waits until discovery lists gvr.
func establish(t *testing.T, config *rest.Config, crd *apiextensionsv1.CustomResourceDefinition, gvr schema.GroupVersionResource) {
	t.Helper()
	ctx := testContext(t)
	client := apiextensionsclient.NewForConfigOrDie(config)
	created, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.AcceptedNames = created.Spec.Names
	created.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	disco := apiextensionsclient.NewForConfigOrDie(config).Discovery()
	envtest.Eventually(t, gvr.Resource+" in discovery", func() (bool, error) {
		list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return true, nil
			}
		}
		return false, nil
	})
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

func TestCustomResourceVerbs(t *testing.T) {
	srv, _ := newClient(t, "team")
	establish(t, srv.Config, widgetCRD(), widgets)
	ctx := testContext(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	res := dyn.Resource(widgets).Namespace("team")

	w, err := res.Create(ctx, widget("a", map[string]any{"color": "red", "extra": "x"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); got != 1 {
		t.Errorf("spec.replicas = %d, want the default 1", got)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "extra"); found {
		t.Error("spec.extra was kept; unknown fields must be pruned")
	}
	if w.GetUID() == "" || w.GetResourceVersion() == "" || w.GetGeneration() != 1 {
		t.Errorf("server metadata not set: uid %q rv %q generation %d", w.GetUID(), w.GetResourceVersion(), w.GetGeneration())
	}

	// Schema and CEL validation, and strict field validation.
	_, err = res.Create(ctx, widget("b", map[string]any{"color": "green"}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `supported values: "red", "blue"`) {
		t.Errorf("enum violation: got %v", err)
	}
	_, err = res.Create(ctx, widget("b", map[string]any{"replicas": 11}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at most ten widgets") {
		t.Errorf("CEL rule violation: got %v", err)
	}
	_, err = res.Create(ctx, widget("b", map[string]any{"extra": 1}), metav1.CreateOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.extra"`) {
		t.Errorf("strict field validation: got %v", err)
	}

	// Get, list, watch.
	watcher, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: w.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	got, err := res.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.GetName() != "a" {
		t.Fatalf("get: %v", err)
	}
	list, err := dyn.Resource(widgets).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.GetKind() != "WidgetList" {
		t.Fatalf("list across namespaces: %v (%d items, kind %q)", err, len(list.Items), list.GetKind())
	}

	// Status is its own subresource; spec changes bump the generation.
	got.Object["status"] = map[string]any{"replicas": int64(3), "selector": "app=w"}
	if err := unstructured.SetNestedField(got.Object, "blue", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	updated, err := res.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found := updated.Object["status"]; found || updated.GetGeneration() != 2 {
		t.Errorf("update of the main resource: status %v (want none), generation %d (want 2)", updated.Object["status"], updated.GetGeneration())
	}
	updated.Object["status"] = map[string]any{"replicas": int64(3), "selector": "app=w"}
	status, err := res.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(status.Object, "status", "replicas"); n != 3 || status.GetGeneration() != 2 {
		t.Errorf("status update: status.replicas %d, generation %d", n, status.GetGeneration())
	}
	ev := <-watcher.ResultChan()
	if ev.Type != watch.Modified {
		t.Errorf("first watch event %s, want MODIFIED", ev.Type)
	}

	// Scale.
	scale, err := res.Get(ctx, "a", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); n != 3 || scale.GetKind() != "Scale" {
		t.Errorf("scale: %v", scale.Object)
	}
	if _, err := res.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}

	// Patches: merge, JSON and apply; strategic merge is refused.
	if _, err := res.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/color","value":"red"}]`), metav1.PatchOptions{}); err != nil {
		t.Errorf("json patch: %v", err)
	}
	_, err = res.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"spec":{"color":"blue"}}`), metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("strategic merge patch: got %v, want 415", err)
	}
	applied, err := res.Apply(ctx, "c", widget("c", map[string]any{"color": "blue"}), metav1.ApplyOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.GetManagedFields()) == 0 || applied.GetManagedFields()[0].Manager != "tester" {
		t.Errorf("apply: managed fields %v", applied.GetManagedFields())
	}
	final, err := res.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(final.Object, "spec", "replicas"); n != 5 {
		t.Errorf("spec.replicas after scaling = %d, want 5", n)
	}

	// An update must name a resourceVersion; of an object that does not
	// exist, it is 404.
	noVersion := final.DeepCopy()
	noVersion.SetResourceVersion("")
	if _, err := res.Update(ctx, noVersion, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update without resourceVersion: %v, want 422", err)
	}
	noVersion.SetName("missing")
	if _, err := res.Update(ctx, noVersion, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing object: %v, want 404", err)
	}

	// Delete one, then the collection.
	if err := res.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := res.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after deletecollection: %v, %d items", err, len(list.Items))
	}
}

// TestCustomResourceWire checks what a client sees on the wire: tables with
// the printer columns, protobuf refused, and the 404 of an unknown version.
func TestCustomResourceWire(t *testing.T) {
	srv, _ := newClient(t, "team")
	establish(t, srv.Config, widgetCRD(), widgets)
	ctx := testContext(t)
	res := dynamic.NewForConfigOrDie(srv.Config).Resource(widgets).Namespace("team")
	if _, err := res.Create(ctx, widget("a", map[string]any{"color": "red"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, accept string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.Config.Host+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := rc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get("/apis/example.com/v1/namespaces/team/widgets", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &table); err != nil || table.Kind != "Table" {
		t.Fatalf("a table was asked for, the answer is %d %s (%v)", resp.StatusCode, body, err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Color" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != "red" {
		t.Errorf("table: columns %v rows %v", names, table.Rows)
	}
	resp = get("/apis/example.com/v1/namespaces/team/widgets", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	var partial metav1.PartialObjectMetadataList
	if err := json.NewDecoder(resp.Body).Decode(&partial); err != nil || len(partial.Items) != 1 || partial.Items[0].Name != "a" {
		t.Errorf("metadata-only list: %v %+v", err, partial)
	}
	// The metadata client (garbage collector, namespace deletion) asks for
	// protobuf first; metadata has a protobuf form even for custom resources.
	metaProto := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	if resp := get("/apis/example.com/v1/namespaces/team/widgets", metaProto); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Errorf("metadata-only list in protobuf: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp := get("/apis/example.com/v1/namespaces/team/widgets/a", "application/vnd.kubernetes.protobuf"); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("protobuf only: %d, want 406", resp.StatusCode)
	}
	if resp := get("/apis/example.com/v1/namespaces/team/widgets/a", "application/vnd.kubernetes.protobuf,application/json"); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("protobuf then json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp := get("/apis/example.com/v2/namespaces/team/widgets", "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unserved version: %d, want 404", resp.StatusCode)
	}

	// OpenAPI v3 lists the group version, and its document has the schema.
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(get("/openapi/v3", "application/json").Body).Decode(&root); err != nil {
		t.Fatal(err)
	}
	ref, ok := root.Paths["apis/example.com/v1"]
	if !ok {
		t.Fatalf("/openapi/v3 does not list apis/example.com/v1")
	}
	doc, _ := io.ReadAll(get(ref.ServerRelativeURL, "application/json").Body)
	if !strings.Contains(string(doc), `"com.example.v1.Widget"`) || !strings.Contains(string(doc), "at most ten widgets") {
		t.Errorf("the v3 document of example.com/v1 lacks the Widget schema:\n%.300s", doc)
	}
}

// redWidgets establishes the widgets' CRD on a new server and creates red
// widgets of those names in namespace team; it returns the server, the
// test's context, the namespace's widgets and an HTTP client for raw
// requests.
func redWidgets(t *testing.T, names ...string) (*envtest.Server, context.Context, dynamic.ResourceInterface, *http.Client) {
	t.Helper()
	srv, _ := newClient(t, "team")
	establish(t, srv.Config, widgetCRD(), widgets)
	ctx := testContext(t)
	res := dynamic.NewForConfigOrDie(srv.Config).Resource(widgets).Namespace("team")
	for _, name := range names {
		if _, err := res.Create(ctx, widget(name, map[string]any{"color": "red"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return srv, ctx, res, rc
}

// TestCustomResourceDeleteOptions: DeleteOptions in the body may carry the
// custom resource's own apiVersion (controller-runtime sends them so), as
// upstream takes them; another group's is refused with a 400.
func TestCustomResourceDeleteOptions(t *testing.T) {
	srv, ctx, res, rc := redWidgets(t, "a", "b")
	del := func(name, body string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, srv.Config.Host+"/apis/example.com/v1/namespaces/team/widgets/"+name, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := rc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("a", `{"kind":"DeleteOptions","apiVersion":"example.com/v1","propagationPolicy":"Foreground"}`); code != http.StatusOK {
		t.Errorf("DeleteOptions of example.com/v1: %d, want 200", code)
	}
	if code := del("b", `{"kind":"DeleteOptions","apiVersion":"other.example/v1"}`); code != http.StatusBadRequest {
		t.Errorf("DeleteOptions of another group: %d, want 400", code)
	}
	if code := del("b", `{"kind":"DeleteOptions","apiVersion":"example.com/v1","propagationPolicy":"Sometimes"}`); code != http.StatusBadRequest {
		t.Errorf("DeleteOptions of example.com/v1 with a bad policy: %d, want 400", code)
	}
	if _, err := res.Get(ctx, "b", metav1.GetOptions{}); err != nil {
		t.Errorf("b after refused deletes: %v", err)
	}
}

// TestCRDDeletion: deleting a CRD leaves it terminating, with the cleanup
// finalizer, until that is removed; meanwhile its objects can be read and
// deleted but not created, and then its resource is gone.
func TestCRDDeletion(t *testing.T) {
	srv, _ := newClient(t, "team")
	crd := widgetCRD()
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	establish(t, srv.Config, crd, widgets)
	ctx := testContext(t)
	crds := apiextensionsclient.NewForConfigOrDie(srv.Config).ApiextensionsV1().CustomResourceDefinitions()
	res := dynamic.NewForConfigOrDie(srv.Config).Resource(widgets)
	if _, err := res.Create(ctx, widget("a", map[string]any{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != apiextensionsv1.CustomResourceCleanupFinalizer {
		t.Fatalf("deleted CRD: deletionTimestamp %v finalizers %v", got.DeletionTimestamp, got.Finalizers)
	}
	envtest.Eventually(t, "creates refused while terminating", func() (bool, error) {
		_, err := res.Create(ctx, widget("b", map[string]any{}), metav1.CreateOptions{})
		if apierrors.IsMethodNotSupported(err) && strings.Contains(err.Error(), "not allowed while custom resource definition is terminating") {
			return true, nil
		}
		if err == nil {
			return false, res.Delete(ctx, "b", metav1.DeleteOptions{})
		}
		return false, nil
	})
	if _, err := res.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("get while terminating: %v", err)
	}
	if err := res.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = nil
	if _, err := crds.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the widgets resource gone", func() (bool, error) {
		_, err := res.List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestApplyDuplicateKeys: an apply patch with a key twice is refused under
// fieldValidation=Strict with the YAML line, as upstream.
func TestApplyDuplicateKeys(t *testing.T) {
	srv, _ := newClient(t, "team")
	establish(t, srv.Config, widgetCRD(), widgets)
	rc := dynamic.NewForConfigOrDie(srv.Config)
	body := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: d\nspec:\n  color: red\n  color: blue\n"
	_, err := rc.Resource(widgets).Namespace("team").Patch(testContext(t), "d", types.ApplyPatchType, []byte(body),
		metav1.PatchOptions{FieldManager: "m", FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `line 7: key "color" already set in map`) {
		t.Errorf("duplicate key under Strict: %v", err)
	}
}

// TestCustomResourceListItems: the items of a custom resource list keep
// their apiVersion and kind, as upstream's do, and concurrent lists served
// from the watch cache leave its objects alone (they once cleared the kind
// in the cache's own maps: a fatal concurrent map write under load, and
// kindless objects in later watch events).
func TestCustomResourceListItems(t *testing.T) {
	srv, ctx, res, rc := redWidgets(t, "a", "b")
	// The raw list: the dynamic client would fill in a missing item kind.
	list := func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.Config.Host+"/apis/example.com/v1/namespaces/team/widgets", nil)
		resp, err := rc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var got struct{ Items []metav1.TypeMeta }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err
		}
		for _, item := range got.Items {
			if item.APIVersion != "example.com/v1" || item.Kind != "Widget" {
				return fmt.Errorf("list item with apiVersion %q kind %q, want example.com/v1 Widget", item.APIVersion, item.Kind)
			}
		}
		if len(got.Items) != 2 {
			return fmt.Errorf("list has %d items, want 2", len(got.Items))
		}
		return nil
	}
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() { errs <- list() }()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}

	// A watch from "0" starts with the cache's objects as they are.
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 2 {
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || !ok || u.GetAPIVersion() != "example.com/v1" || u.GetKind() != "Widget" {
				t.Errorf("initial watch event %s %#v, want ADDED of an example.com/v1 Widget", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("no initial watch event")
		}
	}
}
