package customresource

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/registry"
)

func TestResourceNames(t *testing.T) {
	tests := []struct {
		version    string
		hasStatus  bool
		hasScale   bool
		wantFields bool
	}{
		{version: "v1", hasStatus: true, hasScale: true, wantFields: true},
		{version: "v2"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			res := widgets(t, tt.version)
			if want := (schema.GroupVersion{Group: "example.com", Version: tt.version}); res.GroupVersion != want {
				t.Errorf("GroupVersion = %v, want %v", res.GroupVersion, want)
			}
			if res.Resource != "widgets" || res.Kind != "Widget" || res.SingularName != "widget" || !res.Namespaced {
				t.Errorf("names = %q %q %q namespaced=%v, want widgets Widget widget true", res.Resource, res.Kind, res.SingularName, res.Namespaced)
			}
			if !reflect.DeepEqual(res.ShortNames, []string{"wd"}) || !reflect.DeepEqual(res.Categories, []string{"all"}) {
				t.Errorf("ShortNames = %v, Categories = %v, want [wd] [all]", res.ShortNames, res.Categories)
			}
			if res.NameValidation != registry.NameSubdomain {
				t.Errorf("NameValidation = %v, want NameSubdomain", res.NameValidation)
			}
			if res.HasStatus != tt.hasStatus || (res.ValidateStatusUpdate != nil) != tt.hasStatus {
				t.Errorf("HasStatus = %v, ValidateStatusUpdate set = %v, want %v", res.HasStatus, res.ValidateStatusUpdate != nil, tt.hasStatus)
			}
			if (res.Scale != nil) != tt.hasScale {
				t.Errorf("Scale set = %v, want %v", res.Scale != nil, tt.hasScale)
			}
			if (res.SelectableFields != nil) != tt.wantFields {
				t.Errorf("SelectableFields set = %v, want %v", res.SelectableFields != nil, tt.wantFields)
			}
			obj := res.New().(*unstructured.Unstructured)
			if obj.GetAPIVersion() != "example.com/"+tt.version || obj.GetKind() != "Widget" {
				t.Errorf("New() = %s %s, want example.com/%s Widget", obj.GetAPIVersion(), obj.GetKind(), tt.version)
			}
			list := res.NewList().(*unstructured.UnstructuredList)
			if list.GetAPIVersion() != "example.com/"+tt.version || list.GetKind() != "WidgetList" {
				t.Errorf("NewList() = %s %s, want example.com/%s WidgetList", list.GetAPIVersion(), list.GetKind(), tt.version)
			}
		})
	}
}

func TestResourceAcceptedNames(t *testing.T) {
	crd := crdFrom(t, widgetsCRD)
	crd.Status.AcceptedNames = crd.Spec.Names
	crd.Status.AcceptedNames.ShortNames = nil
	crd.Spec.Names.ShortNames = []string{"wd", "wdg"}
	res, err := Resource(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ShortNames) != 0 {
		t.Errorf("ShortNames = %v, want the accepted ones (none) until the naming controller accepts the new ones", res.ShortNames)
	}
}

func TestResourceErrors(t *testing.T) {
	tests := []struct {
		name    string
		crd     string
		version string
		want    string
	}{
		{name: "no such version", crd: widgetsCRD, version: "v9", want: `has no version "v9"`},
		{name: "neither served nor stored", crd: widgetsCRD, version: "v0", want: "neither served nor stored"},
		{name: "schema not structural", crd: nonStructuralCRD(false), version: "v1", want: "not structural"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resource(crdFrom(t, tt.crd), tt.version)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Resource() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// nonStructuralCRD is a CRD whose schema does not convert to a structural
// one (items given as a list of schemas), as a legacy CRD may have.
func nonStructuralCRD(preserveUnknownFields bool) string {
	preserve := "false"
	if preserveUnknownFields {
		preserve = "true"
	}
	return `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Cluster
  preserveUnknownFields: ` + preserve + `
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
              parts:
                type: array
                items:
                - type: string
`
}

// A legacy CRD with a schema that is not structural is served as upstream
// serves it: no pruning, no defaulting, but OpenAPI validation.
func TestNonStructuralSchema(t *testing.T) {
	res, err := Resource(crdFrom(t, nonStructuralCRD(true)), "v1")
	if err != nil {
		t.Fatalf("Resource() = %v, want the CRD served", err)
	}
	if res.Namespaced {
		t.Error("Namespaced = true for a cluster-scoped CRD")
	}
	obj := object(t, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {unknown: 1}\n")
	if paths := res.Prune(obj); len(paths) != 0 {
		t.Errorf("Prune() = %v, want nothing pruned", paths)
	}
	res.Default(obj)
	want := map[string]interface{}{"unknown": int64(1)}
	if got := obj.Object["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("spec after Prune and Default = %v, want %v", got, want)
	}
	bad := object(t, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: big}\n")
	if errs := res.ValidateCreate(bad); len(errs) != 1 || errs[0].Field != "spec.size" {
		t.Errorf("ValidateCreate(size: big) = %v, want one error on spec.size", errs)
	}
}
