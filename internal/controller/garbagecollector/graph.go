package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference names one object: its owner-reference coordinates
// (apiVersion, kind, name, uid) and its namespace.
type objectReference struct {
	metav1.OwnerReference
	// Namespace is empty for cluster-scoped objects.
	Namespace string
}

// String reads like upstream's, e.g.
// [apps/v1/ReplicaSet, namespace: ns, name: web-1, uid: 1234].
func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// coordinates keeps only the fields that identify an owner, so references that
// differ in controller or blockOwnerDeletion compare equal.
func coordinates(ref metav1.OwnerReference) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// sameCoordinates is true when a and b name the same owner.
func sameCoordinates(a, b metav1.OwnerReference) bool {
	return coordinates(a) == coordinates(b)
}

// node is one object in the ownership graph. An owner that dependents refer
// to but that no informer has reported yet is a "virtual" node until it is
// observed or confirmed absent.
type node struct {
	identity objectReference

	// dependents are the nodes whose ownerReferences name this node.
	dependentsLock sync.RWMutex
	dependents     map[*node]struct{}

	stateLock sync.RWMutex
	// owners are the object's ownerReferences as last observed; written by
	// the graph builder, read by workers (through getOwners).
	owners []metav1.OwnerReference
	// deletingDependents: deletionTimestamp set and the foregroundDeletion
	// finalizer present.
	deletingDependents bool
	// beingDeleted: deletionTimestamp set.
	beingDeleted bool
	// virtual: no informer has reported the object yet.
	virtual bool
}

func newNode(identity objectReference, owners []metav1.OwnerReference) *node {
	return &node{identity: identity, owners: owners, dependents: map[*node]struct{}{}}
}

// clone copies n (dependents included) so a node can be replaced in the
// graph without changing the one workers may hold.
func (n *node) clone() *node {
	c := &node{identity: n.identity, dependents: map[*node]struct{}{}}
	for _, dep := range n.getDependents() {
		c.dependents[dep] = struct{}{}
	}
	n.stateLock.RLock()
	c.owners = n.owners
	c.deletingDependents, c.beingDeleted, c.virtual = n.deletingDependents, n.beingDeleted, n.virtual
	n.stateLock.RUnlock()
	return c
}

func (n *node) getOwners() []metav1.OwnerReference {
	n.stateLock.RLock()
	defer n.stateLock.RUnlock()
	return n.owners
}

func (n *node) setOwners(owners []metav1.OwnerReference) {
	n.stateLock.Lock()
	defer n.stateLock.Unlock()
	n.owners = owners
}

func (n *node) markBeingDeleted() {
	n.stateLock.Lock()
	defer n.stateLock.Unlock()
	n.beingDeleted = true
}

func (n *node) isBeingDeleted() bool {
	n.stateLock.RLock()
	defer n.stateLock.RUnlock()
	return n.beingDeleted
}

func (n *node) markDeletingDependents() {
	n.stateLock.Lock()
	defer n.stateLock.Unlock()
	n.deletingDependents = true
	n.beingDeleted = true
}

func (n *node) isDeletingDependents() bool {
	n.stateLock.RLock()
	defer n.stateLock.RUnlock()
	return n.deletingDependents
}

func (n *node) markObserved() {
	n.stateLock.Lock()
	defer n.stateLock.Unlock()
	n.virtual = false
}

func (n *node) isObserved() bool {
	n.stateLock.RLock()
	defer n.stateLock.RUnlock()
	return !n.virtual
}

func (n *node) addDependent(dep *node) {
	n.dependentsLock.Lock()
	defer n.dependentsLock.Unlock()
	n.dependents[dep] = struct{}{}
}

func (n *node) deleteDependent(dep *node) {
	n.dependentsLock.Lock()
	defer n.dependentsLock.Unlock()
	delete(n.dependents, dep)
}

func (n *node) dependentsLength() int {
	n.dependentsLock.RLock()
	defer n.dependentsLock.RUnlock()
	return len(n.dependents)
}

// getDependents returns a copy of the dependents.
func (n *node) getDependents() []*node {
	n.dependentsLock.RLock()
	defer n.dependentsLock.RUnlock()
	deps := make([]*node, 0, len(n.dependents))
	for dep := range n.dependents {
		deps = append(deps, dep)
	}
	return deps
}

// blockingDependents are the dependents whose reference to n has
// blockOwnerDeletion=true: a foreground deletion of n waits for them.
func (n *node) blockingDependents() []*node {
	var blocking []*node
	for _, dep := range n.getDependents() {
		for _, ref := range dep.getOwners() {
			if ref.UID == n.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking = append(blocking, dep)
				break
			}
		}
	}
	return blocking
}

// partitionDependents splits deps into those whose reference to the owner
// matches identity (coordinates and, for a namespaced owner, namespace) and
// those that do not; a dependent that no longer refers to the owner is in
// neither.
func partitionDependents(deps []*node, identity objectReference) (matching, nonmatching []*node) {
	ownerNamespaced := identity.Namespace != ""
	for _, dep := range deps {
		for _, ref := range dep.getOwners() {
			if ref.UID != identity.UID {
				continue
			}
			if sameCoordinates(ref, identity.OwnerReference) && (!ownerNamespaced || dep.identity.Namespace == identity.Namespace) {
				matching = append(matching, dep)
			} else {
				nonmatching = append(nonmatching, dep)
			}
			break
		}
	}
	return matching, nonmatching
}

// alternateOwnerIdentity returns another identity the dependents refer to
// the owner by, or nil when there is none besides verified.
func alternateOwnerIdentity(deps []*node, verified objectReference) *objectReference {
	for _, dep := range deps {
		for _, ref := range dep.getOwners() {
			if ref.UID != verified.UID {
				continue
			}
			candidate := objectReference{OwnerReference: coordinates(ref), Namespace: dep.identity.Namespace}
			if candidate != verified {
				return &candidate
			}
		}
	}
	return nil
}

// uidToNode is the graph's index, safe for concurrent use.
type uidToNode struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
}

func (m *uidToNode) Write(n *node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[n.identity.UID] = n
}

func (m *uidToNode) Read(uid types.UID) (*node, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, ok := m.nodes[uid]
	return n, ok
}

func (m *uidToNode) Delete(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nodes, uid)
}

func (m *uidToNode) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.nodes)
}
