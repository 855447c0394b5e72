// Command admissionhook is the webhook server the e2e tests run in a pod
// (internal/e2e/webhookpods_test.go builds it into an image). It serves
// HTTPS on :8443 with the certificate and key files of its two arguments:
//
//   - /validate (AdmissionReview v1) refuses objects labelled deny=yes;
//   - /mutate (AdmissionReview v1) adds the label mutated=yes;
//   - /convert (ConversionReview v1) converts widgets between v1, where
//     the colour is spec.color, and v2, where it is spec.paint.color;
//   - /readyz answers ok.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: admissionhook CERT KEY")
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/validate", review(validate))
	mux.HandleFunc("/mutate", review(mutate))
	mux.HandleFunc("/convert", convert)
	fmt.Println("serving on :8443")
	if err := http.ListenAndServeTLS(":8443", os.Args[1], os.Args[2], mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// review decodes an AdmissionReview, answers it with decide's response
// and logs what it decided.
func review(decide func(*admissionv1.AdmissionRequest, *metav1.PartialObjectMetadata) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var ar admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(ar.Request.Object.Raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := decide(ar.Request, &obj)
		resp.UID = ar.Request.UID
		fmt.Printf("%s %s %s/%s: allowed %v\n", r.URL.Path, ar.Request.Operation, ar.Request.Namespace, obj.Name, resp.Allowed)
		ar.Request, ar.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&ar)
	}
}

func validate(req *admissionv1.AdmissionRequest, obj *metav1.PartialObjectMetadata) *admissionv1.AdmissionResponse {
	if obj.Labels["deny"] == "yes" {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden,
			Message: fmt.Sprintf("%s %s is refused by the webhook pod", req.Kind.Kind, obj.Name)}}
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func mutate(_ *admissionv1.AdmissionRequest, obj *metav1.PartialObjectMetadata) *admissionv1.AdmissionResponse {
	patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
	if len(obj.Labels) > 0 {
		patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
}

func convert(w http.ResponseWriter, r *http.Request) {
	var cr apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&cr); err != nil || cr.Request == nil {
		http.Error(w, fmt.Sprintf("not a ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: cr.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range cr.Request.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		convertWidget(obj, cr.Request.DesiredAPIVersion)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Object: obj})
	}
	fmt.Printf("/convert %d objects to %s\n", len(cr.Request.Objects), cr.Request.DesiredAPIVersion)
	cr.Request, cr.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&cr)
}

// convertWidget moves the colour between spec.color (v1) and
// spec.paint.color (v2) and sets apiVersion.
func convertWidget(obj *unstructured.Unstructured, to string) {
	from := obj.GetAPIVersion()
	obj.SetAPIVersion(to)
	if from == to {
		return
	}
	if strings.HasSuffix(to, "/v2") {
		if color, ok, _ := unstructured.NestedString(obj.Object, "spec", "color"); ok {
			unstructured.RemoveNestedField(obj.Object, "spec", "color")
			unstructured.SetNestedField(obj.Object, color, "spec", "paint", "color")
		}
		return
	}
	if color, ok, _ := unstructured.NestedString(obj.Object, "spec", "paint", "color"); ok {
		unstructured.RemoveNestedField(obj.Object, "spec", "paint")
		unstructured.SetNestedField(obj.Object, color, "spec", "color")
	}
}
