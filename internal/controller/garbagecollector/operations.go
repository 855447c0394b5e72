package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
)

// errNamespacedOwnerOfClusterScoped marks a cluster-scoped object that names
// a namespaced owner: invalid, and retrying does not help.
var errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")

// restMappingError is returned when an apiVersion/kind is not served (yet).
type restMappingError struct {
	kind, version string
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.kind, e.version)
}

// apiResource maps an apiVersion and kind to the resource and its scope.
func (c *Controller) apiResource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{kind: kind, version: apiVersion}
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resourceClient returns the metadata client for ref's resource, in ref's
// namespace when the resource is namespaced.
func (c *Controller) resourceClient(ref objectReference) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := c.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, err
	}
	if !namespaced {
		return c.metadata.Resource(gvr), nil
	}
	if ref.Namespace == "" {
		// Only a cluster-scoped dependent names a namespaced owner this way.
		return nil, errNamespacedOwnerOfClusterScoped
	}
	return c.metadata.Resource(gvr).Namespace(ref.Namespace), nil
}

// getObject reads ref's current metadata from the apiserver.
func (c *Controller) getObject(ctx context.Context, ref objectReference) (*metav1.PartialObjectMetadata, error) {
	rc, err := c.resourceClient(ref)
	if err != nil {
		return nil, err
	}
	return rc.Get(ctx, ref.Name, metav1.GetOptions{})
}

// deleteObject deletes ref (only if its uid still matches) with policy.
func (c *Controller) deleteObject(ctx context.Context, ref objectReference, policy metav1.DeletionPropagation) error {
	rc, err := c.resourceClient(ref)
	if err != nil {
		return err
	}
	uid := ref.UID
	return rc.Delete(ctx, ref.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
}

func (c *Controller) patchObject(ctx context.Context, ref objectReference, pt types.PatchType, patch []byte) error {
	rc, err := c.resourceClient(ref)
	if err != nil {
		return err
	}
	_, err = rc.Patch(ctx, ref.Name, pt, patch, metav1.PatchOptions{})
	return err
}

// patch applies a strategic merge patch to n, falling back to the JSON
// merge patch mergePatch builds when the resource does not take strategic
// merge patches (custom resources).
func (c *Controller) patch(ctx context.Context, n *node, smp []byte, mergePatch func(context.Context, *node) ([]byte, error)) error {
	err := c.patchObject(ctx, n.identity, types.StrategicMergePatchType, smp)
	if err == nil || !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	jmp, err := mergePatch(ctx, n)
	if err != nil {
		return err
	}
	return c.patchObject(ctx, n.identity, types.MergePatchType, jmp)
}

// deleteOwnerRefsMergePatch is the JSON merge patch form of removing the
// references to ownerUIDs, guarded by the object's resourceVersion.
func (c *Controller) deleteOwnerRefsMergePatch(ownerUIDs ...types.UID) func(context.Context, *node) ([]byte, error) {
	return func(ctx context.Context, n *node) ([]byte, error) {
		obj, err := c.getObject(ctx, n.identity)
		if err != nil {
			return nil, err
		}
		drop := map[types.UID]bool{}
		for _, uid := range ownerUIDs {
			drop[uid] = true
		}
		refs := []metav1.OwnerReference{}
		for _, ref := range obj.GetOwnerReferences() {
			if !drop[ref.UID] {
				refs = append(refs, ref)
			}
		}
		return json.Marshal(metadataPatch{Metadata: patchMeta{ResourceVersion: obj.GetResourceVersion(), OwnerReferences: refs}})
	}
}

// unblockOwnerRefsMergePatch is the JSON merge patch form of setting
// blockOwnerDeletion=false on every ownerReference of n.
func (c *Controller) unblockOwnerRefsMergePatch(ctx context.Context, n *node) ([]byte, error) {
	obj, err := c.getObject(ctx, n.identity)
	if err != nil {
		return nil, err
	}
	refs := []metav1.OwnerReference{}
	no := false
	for _, ref := range n.getOwners() {
		ref.BlockOwnerDeletion = &no
		refs = append(refs, ref)
	}
	return json.Marshal(metadataPatch{Metadata: patchMeta{ResourceVersion: obj.GetResourceVersion(), OwnerReferences: refs}})
}

// removeFinalizer takes finalizer off n's object, retrying on conflicts.
func (c *Controller) removeFinalizer(ctx context.Context, n *node, finalizer string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := c.getObject(ctx, n.identity)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot finalize owner %s, because cannot get it: %w; the garbage collector will retry later", n.identity, err)
		}
		var kept []string
		found := false
		for _, f := range obj.GetFinalizers() {
			if f == finalizer {
				found = true
				continue
			}
			kept = append(kept, f)
		}
		if !found {
			c.log.Debug("finalizer already removed from object", "finalizer", finalizer, "object", n.identity.String())
			return nil
		}
		patch, err := json.Marshal(finalizersPatch{Metadata: finalizersMeta{ResourceVersion: obj.GetResourceVersion(), Finalizers: kept}})
		if err != nil {
			return err
		}
		return c.patchObject(ctx, n.identity, types.MergePatchType, patch)
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("updateMaxRetries(%d) has reached; the garbage collector will try again later for owner %s", retry.DefaultBackoff.Steps, n.identity)
	}
	return err
}
