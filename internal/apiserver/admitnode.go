package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/admission/noderestriction"
	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// admitNode is upstream's NodeRestriction admission: a kubelet may write
// only its own Node, its own pods' status, mirror pods of its static pods,
// tokens and pod certificates for its pods, its own Lease, CSINode and
// ResourceSlices, and CSRs with its own name. Requests of anyone else pass
// untouched.
func (s *Server) admitNode(ctx context.Context, op string, rs *resourceStore, subresource, namespace, name string, obj, old runtime.Object) error {
	user, ok := filters.UserFrom(ctx)
	if !ok || !s.plugins.on(pluginNodeRestriction) {
		return nil
	}
	if _, isNode := authz.NodeName(user); !isNode {
		return nil
	}
	req := noderestriction.Request{User: user, Operation: op, APIGroup: rs.gvk.Group, Resource: rs.res.Resource,
		Subresource: subresource, Namespace: namespace, Name: name, Object: obj, OldObject: old}
	return noderestriction.Admit(ctx, req, s.nodeLookup(ctx))
}

// nodeLookup reads the stored objects NodeRestriction needs.
func (s *Server) nodeLookup(ctx context.Context) noderestriction.Lookup {
	core, storage := corev1.SchemeGroupVersion, storagev1.SchemeGroupVersion
	return noderestriction.Lookup{
		Pod: func(ns, name string) (*corev1.Pod, error) {
			return lookup[*corev1.Pod](ctx, s, core.WithResource("pods"), ns, name)
		},
		Node: func(name string) (*corev1.Node, error) {
			return lookup[*corev1.Node](ctx, s, core.WithResource("nodes"), "", name)
		},
		Claim: func(ns, name string) (*corev1.PersistentVolumeClaim, error) {
			return lookup[*corev1.PersistentVolumeClaim](ctx, s, core.WithResource("persistentvolumeclaims"), ns, name)
		},
		Volume: func(name string) (*corev1.PersistentVolume, error) {
			return lookup[*corev1.PersistentVolume](ctx, s, core.WithResource("persistentvolumes"), "", name)
		},
		CSIDriver: func(name string) (*storagev1.CSIDriver, error) {
			return lookup[*storagev1.CSIDriver](ctx, s, storage.WithResource("csidrivers"), "", name)
		},
		ServiceAccount: func(ns, name string) (*corev1.ServiceAccount, error) {
			return lookup[*corev1.ServiceAccount](ctx, s, core.WithResource("serviceaccounts"), ns, name)
		},
		Authorizer: s.authz.chain,
	}
}

// lookup reads one stored object of resource gvr, as an apierrors
// NotFound when it is not there.
func lookup[T runtime.Object](ctx context.Context, s *Server, gvr schema.GroupVersionResource, namespace, name string) (T, error) {
	var zero T
	rs, ok := s.resources[gvr]
	if !ok {
		return zero, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj, err := rs.get(ctx, namespace, name)
	if isNotFound(err) {
		return zero, apierrors.NewNotFound(rs.gr, name)
	}
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %q is a %T", rs.gr, name, obj)
	}
	return t, nil
}
