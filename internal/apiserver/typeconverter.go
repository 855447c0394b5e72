package apiserver

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationapply "k8s.io/kube-aggregator/pkg/client/applyconfiguration"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// typeConverter gives managed fields and server-side apply the schemas of
// the built-in types: apiextensions.k8s.io's come with apiextensions-apiserver,
// apiregistration.k8s.io's with kube-aggregator, every other group's with
// client-go.
type typeConverter struct {
	builtin, apiextensions, apiregistration managedfields.TypeConverter
}

var _ managedfields.TypeConverter = typeConverter{}

func newTypeConverter(scheme *runtime.Scheme) typeConverter {
	return typeConverter{
		builtin:         applyconfigurations.NewTypeConverter(scheme),
		apiextensions:   apiextensionsapply.NewTypeConverter(scheme),
		apiregistration: apiregistrationapply.NewTypeConverter(scheme),
	}
}

func (c typeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	switch obj.GetObjectKind().GroupVersionKind().Group {
	case apiextensionsv1.GroupName:
		return c.apiextensions.ObjectToTyped(obj, opts...)
	case apiregistrationv1.GroupName:
		return c.apiregistration.ObjectToTyped(obj, opts...)
	}
	return c.builtin.ObjectToTyped(obj, opts...)
}

// TypedToObject does not depend on the schema: both give unstructured objects.
func (c typeConverter) TypedToObject(value *typed.TypedValue) (runtime.Object, error) {
	return c.builtin.TypedToObject(value)
}
