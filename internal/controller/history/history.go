package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/util/retry"
)

// patchTimeout bounds each adoption or release patch sent by List.
const patchTimeout = 30 * time.Second

// maxCollisions bounds how many names Create tries before it gives up.
const maxCollisions = 100

// History reads ControllerRevisions from a lister and writes them through
// a client.
type History struct {
	client kubernetes.Interface
	lister appslisters.ControllerRevisionLister
}

// NewHistory returns a History over client and lister (usually the shared
// informer factory's ControllerRevision lister).
func NewHistory(client kubernetes.Interface, lister appslisters.ControllerRevisionLister) History {
	return History{client: client, lister: lister}
}

// List returns the revisions in parent's namespace that parent controls and
// selector matches. On the way it adopts the orphans selector matches
// (unless parent is being deleted) and releases the revisions parent
// controls that selector no longer matches. Revisions of other controllers
// are left alone. Errors of single adoptions or releases are returned
// together with the revisions that could be claimed.
func (h History) List(parent metav1.Object, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := h.lister.ControllerRevisions(parent.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list controller revisions of %s/%s: %w", parent.GetNamespace(), parent.GetName(), err)
	}
	var claimed []*appsv1.ControllerRevision
	var errs []error
	for _, rev := range all {
		matches := selector.Matches(labels.Set(rev.Labels))
		ref := metav1.GetControllerOfNoCopy(rev)
		switch {
		case ref != nil && ref.UID != parent.GetUID():
			// Another controller's.
		case ref != nil && matches:
			claimed = append(claimed, rev)
		case ref != nil:
			if parent.GetDeletionTimestamp() != nil {
				continue
			}
			if err := h.release(parent, rev); err != nil {
				errs = append(errs, err)
			}
		case !matches || parent.GetDeletionTimestamp() != nil || rev.DeletionTimestamp != nil:
			// An orphan we should not take.
		default:
			adopted, err := h.adopt(parent, rev)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if adopted != nil {
				claimed = append(claimed, adopted)
			}
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// adopt makes parent the controller of the orphan rev. A revision gone
// meanwhile is not an error: nil is returned.
func (h History) adopt(parent metav1.Object, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	kind, ok := kindOf(parent)
	if !ok {
		return nil, fmt.Errorf("can't adopt ControllerRevision %s/%s: the kind of %s is unknown (pass a StatefulSet, a DaemonSet, or an object with TypeMeta set)",
			rev.Namespace, rev.Name, parent.GetName())
	}
	patch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{
			"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(parent, kind)},
			"uid":             rev.UID,
		},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), patchTimeout)
	defer cancel()
	adopted, err := h.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("can't adopt ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return adopted, nil
}

// release removes parent's reference from rev. A revision gone or replaced
// (the uid in the patch no longer matches) needs no release.
func (h History) release(parent metav1.Object, rev *appsv1.ControllerRevision) error {
	patch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{
			"ownerReferences": []map[string]string{{"$patch": "delete", "uid": string(parent.GetUID())}},
			"uid":             rev.UID,
		},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), patchTimeout)
	defer cancel()
	_, err = h.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return fmt.Errorf("can't release ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
}

// kindOf returns the group, version and kind of parent, for its owner
// reference.
func kindOf(parent metav1.Object) (schema.GroupVersionKind, bool) {
	if obj, ok := parent.(runtime.Object); ok {
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
			return gvk, true
		}
	}
	switch parent.(type) {
	case *appsv1.StatefulSet:
		return appsv1.SchemeGroupVersion.WithKind("StatefulSet"), true
	case *appsv1.DaemonSet:
		return appsv1.SchemeGroupVersion.WithKind("DaemonSet"), true
	}
	return schema.GroupVersionKind{}, false
}

// Create creates rev in parent's namespace. Its name is recomputed from
// *collisionCount; when that name already holds a revision with the same
// data, that revision is returned; when it holds other data, *collisionCount
// is incremented and the next name is tried.
func (h History) Create(ctx context.Context, parent metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("history.Create: collisionCount must not be nil (pass a pointer to the parent's status.collisionCount)")
	}
	ns := parent.GetNamespace()
	for i := 0; i < maxCollisions; i++ {
		clone := rev.DeepCopy()
		clone.Namespace = ns
		hash := Hash(rev, collisionCount)
		clone.Name = Name(parent.GetName(), hash)
		if _, ok := clone.Labels[ControllerRevisionHashLabel]; ok {
			clone.Labels[ControllerRevisionHashLabel] = hash
		}
		created, err := h.client.AppsV1().ControllerRevisions(ns).Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		existing, err := h.client.AppsV1().ControllerRevisions(ns).Get(ctx, clone.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, clone.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
	return nil, fmt.Errorf("create ControllerRevision for %s/%s: %d names in a row are taken by other revisions; delete stale revisions of %s",
		ns, parent.GetName(), maxCollisions, parent.GetName())
}

// UpdateRevision sets rev's .revision to newRevision, retrying conflicts on
// a fresh copy read from the apiserver. It returns the revision as last
// written.
func (h History) UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error) {
	clone := rev.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if clone.Revision == newRevision {
			return nil
		}
		clone.Revision = newRevision
		updated, err := h.client.AppsV1().ControllerRevisions(clone.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		if err == nil {
			clone = updated
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh, getErr := h.client.AppsV1().ControllerRevisions(clone.Namespace).Get(ctx, clone.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		clone = fresh
		return err
	})
	return clone, err
}

// Delete deletes rev; a revision already gone is not an error.
func (h History) Delete(ctx context.Context, rev *appsv1.ControllerRevision) error {
	err := h.client.AppsV1().ControllerRevisions(rev.Namespace).Delete(ctx, rev.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
