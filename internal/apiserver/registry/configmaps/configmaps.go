// Package configmaps is the registry entry for core/v1 configmaps.
package configmaps

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the configmaps entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "configmaps",
		Kind:         "ConfigMap",
		SingularName: "configmap",
		Namespaced:   true,
		ShortNames:   []string{"cm"},
		New:          func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:      func() runtime.Object { return &corev1.ConfigMapList{} },
		Validate:     validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
			if oldCM.Immutable != nil && *oldCM.Immutable {
				if !equalData(cm, oldCM) || cm.Immutable == nil || !*cm.Immutable {
					return field.ErrorList{field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set")}
				}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Data", Type: "string", Description: "Number of data entries"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			cm := obj.(*corev1.ConfigMap)
			return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), registry.Age(cm.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	var errs field.ErrorList
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateKey(field.NewPath("data").Key(key), key)...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateKey(field.NewPath("binaryData").Key(key), key)...)
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

func validateKey(path *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path, key, msg))
	}
	return errs
}

func equalData(a, b *corev1.ConfigMap) bool {
	return apiequality.Semantic.DeepEqual(a.Data, b.Data) && apiequality.Semantic.DeepEqual(a.BinaryData, b.BinaryData)
}
