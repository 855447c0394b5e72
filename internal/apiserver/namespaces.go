package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/storage"
)

// namespaceFinalizers returns spec.finalizers of a Namespace (nil otherwise).
func namespaceFinalizers(obj runtime.Object) []corev1.FinalizerName {
	if ns, ok := obj.(*corev1.Namespace); ok {
		return ns.Spec.Finalizers
	}
	return nil
}

// checkNamespace is upstream's NamespaceLifecycle admission: objects are only
// created in namespaces that exist and are not being deleted.
func (s *Server) checkNamespace(ctx context.Context, rs *resourceStore, obj runtime.Object) error {
	if !rs.res.Namespaced {
		return nil
	}
	nsStore := s.resources[corev1.SchemeGroupVersion.WithResource("namespaces")]
	if nsStore == nil {
		return nil
	}
	name := mustAccessor(obj).GetNamespace()
	ns, err := s.namespace(ctx, nsStore, name)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
		}
		return err
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		err := apierrors.NewForbidden(rs.gr, mustAccessor(obj).GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", name))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", name), Field: "metadata.namespace"})
		return err
	}
	return nil
}

// namespace reads a namespace from the watch cache, and from etcd only when
// the cache does not have it (yet): every namespaced create asks.
func (s *Server) namespace(ctx context.Context, nsStore *resourceStore, name string) (*corev1.Namespace, error) {
	if o, ok := nsStore.cache.Get(nsStore.key("", name)); ok {
		return o.Value.(*corev1.Namespace), nil
	}
	obj, err := nsStore.get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// eachItem calls fn on every item of a list.
func eachItem(list runtime.Object, fn func(runtime.Object)) {
	meta.EachListItem(list, func(o runtime.Object) error { fn(o); return nil })
}
