package customresourcedefinitions

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
)

// widgets is a valid namespaced CRD with one version and a structural schema.
func widgets() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema(apiextensionsv1.JSONSchemaProps{Type: "integer"})},
			},
		},
	}
}

// schema is an object schema whose spec has one property, size.
func schema(size apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": size}},
		},
	}}
}

// create runs what the handlers run on a create, after metadata.
func create(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	r := Resource()
	r.Default(crd)
	r.PrepareForCreate(crd)
	return r.ValidateCreate(crd)
}

// update runs what the handlers run on a write to the main resource: the
// stored status is kept.
func update(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	r := Resource()
	crd.Status = *old.Status.DeepCopy()
	r.Default(crd)
	r.PrepareForUpdate(crd, old)
	return r.ValidateUpdate(crd, old)
}

// updateStatus runs what the handlers run on a write through /status: the
// stored spec is kept.
func updateStatus(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	r := Resource()
	crd.Spec = *old.Spec.DeepCopy()
	r.Default(crd)
	r.PrepareForUpdate(crd, old)
	return r.ValidateStatusUpdate(crd, old)
}

// stored returns crd as created, failing t if it is not valid.
func stored(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	if errs := create(crd); len(errs) > 0 {
		t.Fatalf("create: %v", errs)
	}
	return crd
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "apiextensions.k8s.io/v1" || r.Resource != "customresourcedefinitions" ||
		r.Kind != "CustomResourceDefinition" || r.SingularName != "customresourcedefinition" || r.Namespaced || !r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if !reflect.DeepEqual(r.ShortNames, []string{"crd", "crds"}) || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if r.NameValidation != registry.NameSubdomain {
		t.Errorf("name rule %v", r.NameValidation)
	}
	if _, ok := r.New().(*apiextensionsv1.CustomResourceDefinition); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*apiextensionsv1.CustomResourceDefinitionList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	webhook := &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "conv"}},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
		check  func(*testing.T, *apiextensionsv1.CustomResourceDefinition)
	}{
		{"conversion None, singular, listKind, storedVersions", func(*apiextensionsv1.CustomResourceDefinition) {}, func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			want := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}}
			if !reflect.DeepEqual(crd.Spec.Names, want) {
				t.Errorf("names = %+v", crd.Spec.Names)
			}
			if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter || crd.Spec.Conversion.Webhook != nil {
				t.Errorf("conversion = %+v", crd.Spec.Conversion)
			}
			if !reflect.DeepEqual(crd.Status.StoredVersions, []string{"v1"}) {
				t.Errorf("storedVersions = %v", crd.Status.StoredVersions)
			}
		}},
		{"scope is not defaulted", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = "" }, func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Spec.Scope != "" {
				t.Errorf("scope = %q", crd.Spec.Scope)
			}
		}},
		{"names set are kept", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Singular, crd.Spec.Names.ListKind = "wdgt", "Widgets"
		}, func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Spec.Names.Singular != "wdgt" || crd.Spec.Names.ListKind != "Widgets" {
				t.Errorf("names = %+v", crd.Spec.Names)
			}
		}},
		{"webhook service port 443", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = webhook.DeepCopy() }, func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter || !reflect.DeepEqual(crd.Spec.Conversion.Webhook.ClientConfig.Service.Port, ptr.To[int32](443)) {
				t.Errorf("conversion = %+v", crd.Spec.Conversion.Webhook.ClientConfig.Service)
			}
		}},
		{"storedVersions set are kept", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Status.StoredVersions = []string{"v0"} }, func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			if !reflect.DeepEqual(crd.Status.StoredVersions, []string{"v0"}) {
				t.Errorf("storedVersions = %v", crd.Status.StoredVersions)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := widgets()
			tt.modify(crd)
			Resource().Default(crd)
			tt.check(t, crd)
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	crd := widgets()
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v2", Served: true, Schema: crd.Spec.Versions[0].Schema.DeepCopy(),
	})
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{
		StoredVersions: []string{"v1"},
		Conditions:     []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}},
		AcceptedNames:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
	}
	stored(t, crd)
	want := apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v2"}}
	if !reflect.DeepEqual(crd.Status, want) {
		t.Errorf("status = %+v, want %+v", crd.Status, want)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	established := []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"}}
	withV2 := func(storage bool) func(*apiextensionsv1.CustomResourceDefinition) {
		return func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
				Name: "v2", Served: true, Storage: storage, Schema: schema(apiextensionsv1.JSONSchemaProps{Type: "string"}),
			})
			crd.Spec.Versions[0].Storage = !storage
		}
	}
	tests := []struct {
		name       string
		modify     func(*apiextensionsv1.CustomResourceDefinition)
		wantStored []string
	}{
		{"metadata only", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Labels = map[string]string{"a": "b"} }, []string{"v1"}},
		{"new served version", withV2(false), []string{"v1"}},
		{"new storage version", withV2(true), []string{"v1", "v2"}},
		{"status in the body is ignored", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v9"}}
		}, []string{"v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, widgets())
			old.Status.Conditions = established
			crd := old.DeepCopy()
			tt.modify(crd)
			if errs := update(crd, old); len(errs) > 0 {
				t.Fatalf("update: %v", errs)
			}
			if !reflect.DeepEqual(crd.Status.StoredVersions, tt.wantStored) {
				t.Errorf("storedVersions = %v, want %v", crd.Status.StoredVersions, tt.wantStored)
			}
			if !reflect.DeepEqual(crd.Status.Conditions, established) {
				t.Errorf("conditions = %v, want the stored ones", crd.Status.Conditions)
			}
		})
	}
}

func TestPrepareForStatusUpdate(t *testing.T) {
	tests := []struct {
		name       string
		stored     []string // in the stored object
		written    []string // by the status write
		wantStored []string
	}{
		// The storage version migrator drops versions no object is stored in.
		{"drop an old version", []string{"v0", "v1"}, []string{"v1"}, []string{"v1"}},
		// Upstream's status strategy does not add the storage version back.
		{"drop the storage version", []string{"v0", "v1"}, []string{"v0"}, []string{"v0"}},
		{"empty is defaulted", []string{"v1"}, nil, []string{"v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := widgets()
			old.Spec.Versions = append([]apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v0", Served: true, Schema: schema(apiextensionsv1.JSONSchemaProps{Type: "string"})}}, old.Spec.Versions...)
			old = stored(t, old)
			old.Status.StoredVersions = tt.stored
			crd := old.DeepCopy()
			crd.Status.StoredVersions = tt.written
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}}
			if errs := updateStatus(crd, old); len(errs) > 0 {
				t.Fatalf("status update: %v", errs)
			}
			if !reflect.DeepEqual(crd.Status.StoredVersions, tt.wantStored) {
				t.Errorf("storedVersions = %v, want %v", crd.Status.StoredVersions, tt.wantStored)
			}
		})
	}
}
