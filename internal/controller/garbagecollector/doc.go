// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's garbage collector does.
//
// It keeps a graph of ownerReferences over every resource the apiserver
// serves that supports delete, list and watch (from discovery, read again
// every 30 s; events are ignored as upstream). Each resource is watched with
// a metadata informer; one goroutine applies the changes to the graph and
// queues the objects that may need work:
//
//   - attemptToDelete: an object whose owner was deleted (or never existed)
//     is read again and, when none of its owners exists any more (owners are
//     looked up by uid, so a new owner with the old name does not count), it
//     is deleted with Background propagation, or with the propagation its
//     finalizers already ask for. References to absent owners are removed
//     when other owners remain.
//   - Foreground: an owner deleted with propagationPolicy=Foreground carries
//     the foregroundDeletion finalizer; its dependents are deleted (in
//     foreground themselves when they have dependents), and the finalizer is
//     removed once no dependent with blockOwnerDeletion=true is left, after
//     which the apiserver removes the owner.
//   - attemptToOrphan: an owner deleted with propagationPolicy=Orphan
//     carries the orphan finalizer; its dependents lose their
//     ownerReferences to it, then the finalizer is removed.
//
// A dependent whose ownerReference names an owner in another namespace gets
// an OwnerRefInvalidNamespace warning event and is treated as having lost
// that owner, as upstream since 1.20.
//
// Use:
//
//	gc := garbagecollector.New(controllerCtx)
//	go gc.Start(ctx) // blocks until ctx ends
package garbagecollector
