package customresourcedefinitions

import (
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 36, 32, 0, time.UTC))
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
		want   []interface{}
	}{
		{"one version, not established", func(*apiextensionsv1.CustomResourceDefinition) {}, []interface{}{
			"widgets.example.com", "Namespaced", "v1(storage)", "2025-05-03T16:36:32Z", "example.com", "Widget", "wd", false,
		}},
		{"served versions sorted, unserved left out, established", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
			crd.Spec.Names.ShortNames = []string{"wd", "wdg"}
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}, {Name: "v1alpha1"},
			}
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		}, []interface{}{
			"widgets.example.com", "Cluster", "v1(storage),v1beta1", "2025-05-03T16:36:32Z", "example.com", "Widget", "wd,wdg", true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := widgets()
			crd.CreationTimestamp = created
			tt.modify(crd)
			row := r.Row(crd, created.Add(time.Hour))
			registrytest.CheckTable(t, r, row)
			if !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %#v, want %#v", row, tt.want)
			}
		})
	}
	var headers []string
	for _, c := range r.Columns {
		if c.Priority == 0 {
			headers = append(headers, c.Name)
		}
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Scope", "Versions", "Created At"}) {
		t.Errorf("kubectl get crd shows %v", headers)
	}
}
