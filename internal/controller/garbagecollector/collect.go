package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"orch/internal/worker"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// errEnqueuedVirtualDelete: the object is gone and the graph was told so;
// nothing to retry.
var errEnqueuedVirtualDelete = errors.New("enqueued virtual delete event")

// collect handles one node of attemptToDelete.
func (c *Controller) collect(ctx context.Context, n *node) (worker.Result, error) {
	c.workerLock.RLock()
	defer c.workerLock.RUnlock()
	if !n.isObserved() {
		current, ok := c.builder.uidToNode.Read(n.identity.UID)
		if !ok || current.isObserved() {
			// Deleted or observed for real since it was queued.
			return worker.Result{}, nil
		}
	}
	err := c.attemptToDeleteItem(ctx, n)
	var mapping *restMappingError
	switch {
	case errors.Is(err, errEnqueuedVirtualDelete), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		return worker.Result{}, nil
	case errors.As(err, &mapping):
		// A kind not served (yet): retry after the next discovery sync.
		c.log.Debug("error syncing item", "item", n.identity.String(), "err", err)
		return worker.Result{Requeue: true}, nil
	case err != nil:
		return worker.Result{}, fmt.Errorf("item %s: %w", n.identity.String(), err)
	case !n.isObserved():
		// The owner exists but no informer reported it yet: look again
		// later, or a virtual node for an object created and deleted while
		// a watch restarted could stay in the graph forever.
		return worker.Result{Requeue: true}, nil
	}
	return worker.Result{}, nil
}

// attemptToDeleteItem reads the object behind n and deletes it when all its
// owners are gone (or waiting for it in a foreground deletion); it removes
// references to absent owners when others remain, and finishes foreground
// deletions whose blocking dependents are gone.
func (c *Controller) attemptToDeleteItem(ctx context.Context, item *node) error {
	log := c.log.With("item", item.identity.String())
	log.Debug("processing item", "virtual", !item.isObserved())
	// Being deleted is a one-way trip: wait for the deletion, then the
	// dependents are processed.
	if item.isBeingDeleted() && !item.isDeletingDependents() {
		return nil
	}
	latest, err := c.getObject(ctx, item.identity)
	switch {
	case apierrors.IsNotFound(err):
		// A virtual owner that does not exist, or an object deleted before
		// its informer said so.
		c.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDelete
	case err != nil:
		return err
	}
	if latest.GetUID() != item.identity.UID {
		// Same name, another object: the one the graph knows is gone.
		c.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDelete
	}
	if item.isDeletingDependents() {
		return c.processDeletingDependentsItem(ctx, item)
	}
	refs := latest.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classifyReferences(ctx, item, refs)
	if err != nil {
		return err
	}
	switch {
	case len(solid) != 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// References to owners waiting on this item must go too, or those
		// owners would wait for ever.
		uids := append(refUIDs(dangling), refUIDs(waiting)...)
		log.Debug("removing dangling and waiting references", "owners", uids)
		patch, err := deleteOwnerRefsStrategicPatch(item.identity.UID, uids...)
		if err != nil {
			return err
		}
		return c.patch(ctx, item, patch, c.deleteOwnerRefsMergePatch(uids...))
	case len(waiting) != 0 && item.dependentsLength() != 0:
		for _, dep := range item.getDependents() {
			if dep.isDeletingDependents() {
				// A dependent waits for this item while this item's owner
				// waits for it: unblock to avoid a cycle.
				log.Debug("owner and dependent both delete in foreground; unblocking the item's owner references", "dependent", dep.identity.String())
				patch, err := unblockOwnerRefsStrategicPatch(item)
				if err != nil {
					return err
				}
				if err := c.patch(ctx, item, patch, c.unblockOwnerRefsMergePatch); err != nil {
					return err
				}
				break
			}
		}
		log.Debug("an owner deletes in foreground and the item has dependents: deleting it in foreground")
		return c.deleteObject(ctx, item.identity, metav1.DeletePropagationForeground)
	default:
		// No owner left: collect the item, honouring a propagation policy
		// someone already asked for.
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		log.Debug("deleting item", "propagationPolicy", policy)
		return c.deleteObject(ctx, item.identity, policy)
	}
}

// classifyReferences sorts refs into solid (owner exists), dangling (owner
// absent) and waiting (owner deleting its dependents in foreground).
func (c *Controller) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := c.isDangling(ctx, ref, item)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case beingDeleted(owner) && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling asks whether ref names an owner that does not exist: no object
// of that name in the dependent's namespace (or cluster-wide), or one with
// another uid. It returns the owner when it exists.
func (c *Controller) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node) (bool, *metav1.PartialObjectMetadata, error) {
	key := objectReference{OwnerReference: coordinates(ref)}
	if c.absentOwnerCache.Has(key) {
		return true, nil, nil
	}
	key.Namespace = item.identity.Namespace
	if c.absentOwnerCache.Has(key) {
		return true, nil, nil
	}
	_, namespaced, err := c.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && namespaced {
		c.log.Info("cluster-scoped object refers to a namespaced owner", "item", item.identity.String(), "owner", ref.Name)
		c.builder.reportInvalidNamespaceOwnerRef(item, ref.UID)
		return false, nil, errNamespacedOwnerOfClusterScoped
	}
	owner, err := c.getObject(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		c.absentOwnerCache.Add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	}
	if owner.GetUID() != ref.UID {
		c.absentOwnerCache.Add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

// processDeletingDependentsItem finishes a foreground deletion once no
// blocking dependent is left, and otherwise makes sure they are deleted.
func (c *Controller) processDeletingDependentsItem(ctx context.Context, item *node) error {
	blocking := item.blockingDependents()
	if len(blocking) == 0 {
		c.log.Debug("removing the foregroundDeletion finalizer", "item", item.identity.String())
		return c.removeFinalizer(ctx, item, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.isDeletingDependents() {
			c.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// orphan handles one owner deleted with the Orphan policy: its dependents
// lose their reference to it, then it loses the orphan finalizer.
func (c *Controller) orphan(ctx context.Context, owner *node) (worker.Result, error) {
	c.workerLock.RLock()
	defer c.workerLock.RUnlock()
	err := c.orphanDependents(ctx, owner.identity, owner.getDependents())
	if err == nil {
		err = c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
	}
	if err != nil {
		return worker.Result{}, fmt.Errorf("orphan the dependents of %s: %w", owner.identity.String(), err)
	}
	return worker.Result{}, nil
}

// orphanDependents removes the references to owner from every dependent, in
// parallel.
func (c *Controller) orphanDependents(ctx context.Context, owner objectReference, deps []*node) error {
	var wg sync.WaitGroup
	errs := make([]error, len(deps))
	for i, dep := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			patch, err := deleteOwnerRefsStrategicPatch(dep.identity.UID, owner.UID)
			if err == nil {
				err = c.patch(ctx, dep, patch, c.deleteOwnerRefsMergePatch(owner.UID))
			}
			// A reference already gone is no error for a strategic merge patch.
			if err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("orphaning %s failed: %w", dep.identity, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to orphan dependents of owner %s: %w", owner, err)
	}
	return nil
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	uids := make([]types.UID, 0, len(refs))
	for _, ref := range refs {
		uids = append(uids, ref.UID)
	}
	return uids
}
