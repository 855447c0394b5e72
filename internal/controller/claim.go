package controller

import (
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Claim settles which of objects an owner controls, as upstream's
// ControllerRefManager does: objects it controls that still match are
// kept, those that no longer match are released, and matching orphans are
// adopted. While the owner is being deleted it neither adopts nor
// releases. Before the first adoption the owner is read fresh (Recheck):
// an owner that is gone or being deleted must not adopt.
type Claim[T metav1.Object] struct {
	Owner   metav1.Object
	Matches func(T) bool
	// Recheck reads the owner from the apiserver; see RecheckOwner.
	Recheck func() error
	// Adopt makes Owner the controller of obj and returns the object to
	// count as claimed.
	Adopt func(T) (T, error)
	// Release removes Owner's reference from obj.
	Release func(T) error
}

// Run returns the objects Owner controls once adoptions and releases are
// done. An object gone meanwhile (NotFound) or replaced (Invalid: its uid
// no longer matches the patch) is skipped without error.
func (c Claim[T]) Run(objects []T) ([]T, error) {
	recheck := sync.OnceValue(c.Recheck)
	ownerGoing := c.Owner.GetDeletionTimestamp() != nil
	var claimed []T
	var errs []error
	for _, obj := range objects {
		matches := c.Matches(obj)
		ref := metav1.GetControllerOfNoCopy(obj)
		switch {
		case ref != nil && ref.UID != c.Owner.GetUID():
			// Another controller's.
		case ref != nil && matches:
			claimed = append(claimed, obj)
		case ref != nil:
			if !ownerGoing {
				if err := c.Release(obj); err != nil && !gone(err) {
					errs = append(errs, err)
				}
			}
		case !matches || ownerGoing || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != c.Owner.GetNamespace():
			// An orphan we cannot or should not take.
		default:
			if err := recheck(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt %s (%s): %w", Key(obj), obj.GetUID(), err))
				continue
			}
			adopted, err := c.Adopt(obj)
			if err != nil {
				if !gone(err) {
					errs = append(errs, err)
				}
				continue
			}
			claimed = append(claimed, adopted)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

func gone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsInvalid(err) }

// RecheckOwner is Claim.Recheck's verdict on fresh, the owner as just read
// (err being the read's error): it must be the same object (uid) and not
// being deleted.
func RecheckOwner(kind string, owner, fresh metav1.Object, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	case fresh.GetUID() != owner.GetUID():
		return fmt.Errorf("original %s %s is gone: got uid %s, wanted %s", kind, Key(owner), fresh.GetUID(), owner.GetUID())
	case fresh.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s %s has just been deleted at %v", kind, Key(owner), fresh.GetDeletionTimestamp())
	}
	return nil
}

// AdoptPatch is the strategic merge patch that makes owner the controller
// of the object with uid (the uid makes it fail on a replaced object);
// extra adds more metadata fields (e.g. finalizers).
func AdoptPatch(owner metav1.OwnerReference, uid types.UID, extra map[string]any) []byte {
	return metadataPatch(map[string]any{"ownerReferences": []metav1.OwnerReference{owner}, "uid": uid}, extra)
}

// ReleasePatch is the strategic merge patch that removes the reference to
// ownerUID from the object with uid; extra adds more metadata directives.
func ReleasePatch(ownerUID, uid types.UID, extra map[string]any) []byte {
	return metadataPatch(map[string]any{
		"ownerReferences": []map[string]string{{"$patch": "delete", "uid": string(ownerUID)}}, "uid": uid,
	}, extra)
}

func metadataPatch(fields, extra map[string]any) []byte {
	for k, v := range extra {
		fields[k] = v
	}
	b, _ := json.Marshal(map[string]any{"metadata": fields}) // plain maps, slices and strings always marshal
	return b
}
