package manifests

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the server-side apply manager of every applied field.
const FieldManager = "orch-manifests"

// resettableMapper is a RESTMapper whose discovery can be forgotten
// (restmapper.DeferredDiscoveryRESTMapper).
type resettableMapper interface {
	meta.RESTMapper
	Reset()
}

// objectApplier applies single objects with server-side apply.
type objectApplier struct {
	dynamic dynamic.Interface
	mapper  resettableMapper
}

// apply applies obj (force: the manifest wins conflicts with other
// managers) and returns the object as stored. A namespaced object without
// a namespace goes to "default"; a cluster-scoped one loses its namespace.
func (a *objectApplier) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	mapping, err := a.mapping(obj)
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	var client dynamic.ResourceInterface = a.dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		client = a.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else {
		obj.SetNamespace("")
	}
	return client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
}

// mapping finds the resource of obj's kind; a kind discovery does not know
// (a CustomResourceDefinition applied a moment ago) makes it discover again
// once before it gives up.
func (a *objectApplier) mapping(obj *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("the server has no resource for kind %q in %q (is its CustomResourceDefinition applied?)", gvk.Kind, gvk.GroupVersion().String())
	}
	if err != nil {
		return nil, fmt.Errorf("find the resource of %s: %w", gvk, err)
	}
	return mapping, nil
}
