package garbagecollector

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/client-go/informers"

	"orch/internal/worker"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

// event is one change the graph builder applies: from an informer, or
// "virtual" when a worker found that an object the graph holds is gone.
type event struct {
	virtual   bool
	eventType eventType
	obj       any
	oldObj    any
	gvk       schema.GroupVersionKind
}

// graphBuilder keeps the ownership graph: monitors put every change of every
// watched resource on graphChanges, one goroutine applies them to uidToNode
// and hands the nodes that may need work to attemptToDelete and
// attemptToOrphan.
type graphBuilder struct {
	log      *slog.Logger
	metadata metadata.Interface
	// shared are the controllers' informers, which watch the resources the
	// typed factory knows for the collector too; nil: none.
	shared   informers.SharedInformerFactory
	mapper   meta.RESTMapper
	recorder record.EventRecorder

	monitorLock sync.RWMutex
	monitors    map[schema.GroupVersionResource]*monitor
	// ctx is set once the builder runs; monitors start under it.
	ctx context.Context

	graphChanges     workqueue.TypedRateLimitingInterface[*event]
	uidToNode        *uidToNode
	attemptToDelete  workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan  workqueue.TypedRateLimitingInterface[*node]
	absentOwnerCache *referenceCache
}

// run starts the monitors and applies graph changes until ctx ends.
func (gb *graphBuilder) run(ctx context.Context) {
	gb.monitorLock.Lock()
	gb.ctx = ctx
	gb.startMonitorsLocked()
	gb.monitorLock.Unlock()
	// One worker: the changes apply in the order they were seen.
	worker.Run(ctx, gb.graphChanges, gb.applyGraphChange, worker.Options{Log: gb.log})
	gb.stopMonitors()
}

// enqueueVirtualDeleteEvent tells the graph that ref no longer exists.
func (gb *graphBuilder) enqueueVirtualDeleteEvent(ref objectReference) {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	gb.graphChanges.Add(&event{
		virtual:   true,
		eventType: deleteEvent,
		gvk:       gv.WithKind(ref.Kind),
		obj: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, UID: ref.UID, Name: ref.Name},
		},
	})
}

// identityFromEvent is the identity of the object an event is about.
func identityFromEvent(e *event, accessor metav1.Object) objectReference {
	return objectReference{
		OwnerReference: metav1.OwnerReference{
			APIVersion: e.gvk.GroupVersion().String(),
			Kind:       e.gvk.Kind,
			UID:        accessor.GetUID(),
			Name:       accessor.GetName(),
		},
		Namespace: accessor.GetNamespace(),
	}
}

// applyGraphChange applies one change to the graph; it never fails.
func (gb *graphBuilder) applyGraphChange(_ context.Context, e *event) (worker.Result, error) {
	accessor, err := meta.Accessor(e.obj)
	if err != nil {
		gb.log.Error("garbage collector: cannot read an object's metadata", "err", err)
		return worker.Result{}, nil
	}
	uid := accessor.GetUID()
	existing, found := gb.uidToNode.Read(uid)
	if found && !e.virtual && !existing.isObserved() {
		existing = gb.observeVirtualNode(existing, identityFromEvent(e, accessor))
	}
	switch {
	case (e.eventType == addEvent || e.eventType == updateEvent) && !found:
		n := newNode(identityFromEvent(e, accessor), accessor.GetOwnerReferences())
		n.deletingDependents = beingDeleted(accessor) && hasFinalizer(accessor, metav1.FinalizerDeleteDependents)
		n.beingDeleted = beingDeleted(accessor)
		gb.insertNode(n)
		// The informer may fold a create and a deletion into one event.
		gb.processTransitions(e.oldObj, accessor, n)
	case e.eventType == addEvent || e.eventType == updateEvent:
		owners := accessor.GetOwnerReferences()
		added, removed, changed := referencesDiffs(existing.getOwners(), owners)
		if len(added) != 0 || len(removed) != 0 || len(changed) != 0 {
			// Owners waiting on this dependent may be unblocked now.
			gb.addUnblockedOwnersToDeleteQueue(removed, changed)
			existing.setOwners(owners)
			gb.addDependentToOwners(existing, added)
			gb.removeDependentFromOwners(existing, removed)
		}
		if beingDeleted(accessor) {
			existing.markBeingDeleted()
		}
		gb.processTransitions(e.oldObj, accessor, existing)
	case e.eventType == deleteEvent:
		if !found {
			gb.log.Debug("deleted object is not in the graph", "uid", uid)
			return worker.Result{}, nil
		}
		gb.processDeletion(e, accessor, existing)
	}
	return worker.Result{}, nil
}

// observeVirtualNode marks a virtual node observed. When dependents named the
// owner by other coordinates than the informer reports, the node is replaced
// with one carrying the observed identity and the disagreeing dependents are
// checked again (bad child before good parent).
func (gb *graphBuilder) observeVirtualNode(existing *node, observed objectReference) *node {
	if observed != existing.identity {
		_, suspicious := partitionDependents(existing.getDependents(), observed)
		for _, dep := range suspicious {
			if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
				gb.log.Info("object references an owner in another namespace", "item", dep.identity.String(), "owner", observed.String())
				gb.reportInvalidNamespaceOwnerRef(dep, observed.UID)
			}
			gb.attemptToDelete.Add(dep)
		}
		gb.log.Debug("replacing virtual item with observed item", "virtual", existing.identity.String(), "observed", observed.String())
		existing = existing.clone()
		existing.identity = observed
		gb.uidToNode.Write(existing)
	}
	existing.markObserved()
	return existing
}

// processDeletion removes a deleted object from the graph and queues its
// dependents (their owner is gone) and owners that wait for dependents.
func (gb *graphBuilder) processDeletion(e *event, accessor metav1.Object, existing *node) {
	if e.virtual {
		deleted := identityFromEvent(e, accessor)
		if !gb.acceptVirtualDeletion(existing, deleted) {
			return
		}
	}
	gb.removeNode(existing)
	deps := existing.getDependents()
	if len(deps) > 0 {
		gb.absentOwnerCache.Add(identityFromEvent(e, accessor))
	}
	for _, dep := range deps {
		gb.attemptToDelete.Add(dep)
	}
	for _, ref := range existing.getOwners() {
		owner, ok := gb.uidToNode.Read(ref.UID)
		if ok && owner.isDeletingDependents() {
			// Let the owner check whether its last blocking dependent went.
			gb.attemptToDelete.Add(owner)
		}
	}
}

// acceptVirtualDeletion decides whether a worker's finding that deleted does
// not exist removes existing from the graph. It does not when dependents name
// the owner by other coordinates: those are checked separately.
func (gb *graphBuilder) acceptVirtualDeletion(existing *node, deleted objectReference) bool {
	if existing.isObserved() {
		if existing.identity == deleted {
			return true
		}
		// The informer saw the object under other coordinates: only the
		// dependents that used the absent coordinates lose their owner.
		matching, _ := partitionDependents(existing.getDependents(), deleted)
		if len(matching) > 0 {
			gb.absentOwnerCache.Add(deleted)
			for _, dep := range matching {
				gb.attemptToDelete.Add(dep)
			}
		}
		return false
	}
	matching, nonmatching := partitionDependents(existing.getDependents(), deleted)
	if len(nonmatching) == 0 {
		return true
	}
	if len(matching) > 0 {
		gb.absentOwnerCache.Add(deleted)
		for _, dep := range matching {
			gb.attemptToDelete.Add(dep)
		}
	}
	if existing.identity == deleted {
		if alt := alternateOwnerIdentity(nonmatching, deleted); alt != nil {
			replacement := existing.clone()
			replacement.identity = *alt
			gb.uidToNode.Write(replacement)
			gb.attemptToDelete.AddRateLimited(replacement)
		}
	}
	return false
}

// insertNode adds n to the graph and to its owners' dependents.
func (gb *graphBuilder) insertNode(n *node) {
	gb.uidToNode.Write(n)
	gb.addDependentToOwners(n, n.getOwners())
}

// removeNode takes n out of the graph and out of its owners' dependents.
func (gb *graphBuilder) removeNode(n *node) {
	gb.uidToNode.Delete(n.identity.UID)
	gb.removeDependentFromOwners(n, n.getOwners())
}

// addDependentToOwners records n as a dependent of each owner. An owner not
// in the graph gets a virtual node that a worker verifies; a reference whose
// coordinates or namespace disagree with the observed owner queues n for a
// check (upstream's good parent, bad child case).
func (gb *graphBuilder) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	suspicious := false
	for _, ref := range owners {
		owner, ok := gb.uidToNode.Read(ref.UID)
		if !ok {
			owner = newNode(objectReference{OwnerReference: coordinates(ref), Namespace: n.identity.Namespace}, nil)
			owner.virtual = true
			gb.log.Debug("add virtual item", "identity", owner.identity.String())
			gb.uidToNode.Write(owner)
		}
		owner.addDependent(n)
		if !ok {
			// A worker asks the apiserver whether this owner exists.
			gb.attemptToDelete.Add(owner)
			continue
		}
		if owner.isDeletingDependents() {
			// The owner's foreground deletion began before n was seen: its
			// dependents were queued then, so queue n now.
			gb.attemptToDelete.Add(n)
		}
		if suspicious {
			continue
		}
		ownerNamespaced := owner.identity.Namespace != ""
		switch {
		case ownerNamespaced && owner.identity.Namespace != n.identity.Namespace:
			if owner.isObserved() {
				gb.log.Info("object references an owner in another namespace", "item", n.identity.String(), "owner", owner.identity.String())
				gb.reportInvalidNamespaceOwnerRef(n, ref.UID)
			}
			suspicious = true
		case !sameCoordinates(ref, owner.identity.OwnerReference):
			suspicious = true
		case !ownerNamespaced && owner.identity.Namespace != n.identity.Namespace && !owner.isObserved():
			// A virtual cluster-scoped owner may be a namespaced type named by a
			// cluster-scoped dependent.
			suspicious = true
		}
	}
	if suspicious {
		gb.attemptToDelete.Add(n)
	}
}

// removeDependentFromOwners drops n from the dependents of owners.
func (gb *graphBuilder) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, ref := range owners {
		if owner, ok := gb.uidToNode.Read(ref.UID); ok {
			owner.deleteDependent(n)
		}
	}
}

// addUnblockedOwnersToDeleteQueue queues owners that a dependent stopped
// blocking: the reference went away or blockOwnerDeletion turned false.
func (gb *graphBuilder) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed []ownerRefPair) {
	for _, ref := range removed {
		if isTrue(ref.BlockOwnerDeletion) {
			if owner, ok := gb.uidToNode.Read(ref.UID); ok {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
	for _, c := range changed {
		if isTrue(c.oldRef.BlockOwnerDeletion) && !isTrue(c.newRef.BlockOwnerDeletion) {
			if owner, ok := gb.uidToNode.Read(c.newRef.UID); ok {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
}

// processTransitions starts orphaning or foreground deletion when an object
// has just been marked for deletion with the matching finalizer.
func (gb *graphBuilder) processTransitions(oldObj any, accessor metav1.Object, n *node) {
	if deletionStartsWithFinalizer(oldObj, accessor, metav1.FinalizerOrphanDependents) {
		gb.log.Debug("add item to attemptToOrphan", "item", n.identity.String())
		gb.attemptToOrphan.Add(n)
		return
	}
	if deletionStartsWithFinalizer(oldObj, accessor, metav1.FinalizerDeleteDependents) {
		gb.log.Debug("add item to attemptToDelete: it waits for its dependents to be deleted", "item", n.identity.String())
		// A node first added as virtual did not know; set it here.
		n.markDeletingDependents()
		for _, dep := range n.getDependents() {
			gb.attemptToDelete.Add(dep)
		}
		gb.attemptToDelete.Add(n)
	}
}
