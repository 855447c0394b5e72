package customresourcedefinitions

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// columns are upstream's table for CRDs: `kubectl get crd` shows name, scope,
// served versions and creation time; -o wide adds group, kind, short names
// and whether the CRD is established.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
	{Name: "Scope", Type: "string", Description: "Cluster/Namespaced"},
	{Name: "Versions", Type: "string", Description: "Served versions"},
	{Name: "Created At", Type: "date", Description: metaDocs["creationTimestamp"]},
	{Name: "Group", Type: "string", Priority: 1, Description: "API group"},
	{Name: "Kind", Type: "string", Priority: 1, Description: "CustomResource kind"},
	{Name: "ShortNames", Type: "string", Priority: 1, Description: "Short names"},
	{Name: "Established", Type: "boolean", Priority: 1, Description: "Established status"},
}

func row(obj runtime.Object, _ time.Time) []interface{} {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	var served []string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Storage {
			served = append(served, v.Name+"(storage)")
		} else {
			served = append(served, v.Name)
		}
	}
	sort.Strings(served)
	return []interface{}{
		crd.Name,
		string(crd.Spec.Scope),
		strings.Join(served, ","),
		crd.CreationTimestamp.UTC().Format(time.RFC3339),
		crd.Spec.Group,
		crd.Spec.Names.Kind,
		strings.Join(crd.Spec.Names.ShortNames, ","),
		apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established),
	}
}
