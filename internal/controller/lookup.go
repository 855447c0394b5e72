package controller

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// NamespaceGetter is a namespace lister (a listers' Deployments(ns), say):
// it gets an object of one namespace by name.
type NamespaceGetter[T any] interface {
	Get(name string) (T, error)
}

// Lookup gets the object with the namespace/name key from the lister
// namespaced returns for its namespace, as a sync begins. It returns the
// zero T (nil) and no error when the key is not one we produce (nothing to
// retry) or the object is gone.
func Lookup[T any, G NamespaceGetter[T]](key string, namespaced func(namespace string) G) (T, error) {
	var none T
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return none, nil // not a key we produce; nothing to retry
	}
	obj, err := namespaced(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return none, nil
	}
	return obj, err
}
