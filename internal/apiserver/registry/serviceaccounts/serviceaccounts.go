// Package serviceaccounts is the registry entry for core/v1 serviceaccounts.
package serviceaccounts

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// Resource returns the serviceaccounts entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "serviceaccounts",
		Kind:             "ServiceAccount",
		SingularName:     "serviceaccount",
		Namespaced:       true,
		ShortNames:       []string{"sa"},
		New:              func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:          func() runtime.Object { return &corev1.ServiceAccountList{} },
		PrepareForCreate: func(obj runtime.Object) { cleanSecretReferences(obj.(*corev1.ServiceAccount)) },
		PrepareForUpdate: func(obj, _ runtime.Object) { cleanSecretReferences(obj.(*corev1.ServiceAccount)) },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			sa := obj.(*corev1.ServiceAccount)
			return []interface{}{sa.Name, int64(len(sa.Secrets)), registry.Age(sa.CreationTimestamp, now)}
		},
	}
}

// cleanSecretReferences keeps only the name of each referenced secret, as
// upstream does.
func cleanSecretReferences(sa *corev1.ServiceAccount) {
	for i, s := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: s.Name}
	}
}
