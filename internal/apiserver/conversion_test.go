package apiserver_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// colourWebhook converts widgets between v1 (spec.color) and v2
// (spec.colour), as a CRD's conversion webhook.
func colourWebhook(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			from, to := "color", "colour"
			if review.Request.DesiredAPIVersion == "example.com/v1" {
				from, to = to, from
			}
			if v, ok, _ := unstructured.NestedString(u.Object, "spec", from); ok {
				unstructured.RemoveNestedField(u.Object, "spec", from)
				unstructured.SetNestedField(u.Object, v, "spec", to)
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			u.SetLabels(map[string]string{"converted": "yes"})
			u.SetUID("changed-by-the-webhook") // not taken
			data, _ := u.MarshalJSON()
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtimeRaw(data))
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConversionWebhook: a CRD with v1 (stored) and v2 served and the
// Webhook strategy; each version reads and writes through the webhook.
func TestConversionWebhook(t *testing.T) {
	srv, _ := newClient(t, "team")
	hook := colourWebhook(t)
	crd := widgetCRD()
	v2 := crd.Spec.Versions[0]
	v2.Name, v2.Storage = "v2", false
	v2.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"colour": {Type: "string"}}}}}}
	v2.Subresources, v2.AdditionalPrinterColumns = nil, nil
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	url := hook.URL + "/convert"
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle}}}
	establish(t, srv.Config, crd, widgets)
	ctx := testContext(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	v1Res := dyn.Resource(widgets).Namespace("team")
	v2Res := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("team")

	created, err := v1Res.Create(ctx, widget("a", map[string]any{"color": "red"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v2Res.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "colour"); c != "red" || got.GetAPIVersion() != "example.com/v2" {
		t.Errorf("v1 object read as v2: %v", got.Object)
	}
	if got.GetUID() != created.GetUID() || got.GetLabels()["converted"] != "yes" {
		t.Errorf("metadata after conversion: uid %s (want %s), labels %v (want the webhook's)", got.GetUID(), created.GetUID(), got.GetLabels())
	}

	b := widget("b", map[string]any{"colour": "blue"})
	b.SetAPIVersion("example.com/v2")
	if _, err := v2Res.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := v1Res.Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(stored.Object, "spec", "color"); c != "blue" {
		t.Errorf("v2 object read as v1: %v", stored.Object)
	}
	list, err := v2Res.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list as v2: %v (%d items)", err, len(list.Items))
	}

	hook.Close()
	if _, err := v2Res.Get(ctx, "a", metav1.GetOptions{}); err == nil {
		t.Error("a read needing the webhook succeeded while it was down")
	}
}

func runtimeRaw(data []byte) runtime.RawExtension { return runtime.RawExtension{Raw: data} }
