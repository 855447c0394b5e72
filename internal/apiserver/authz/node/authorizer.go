// Package node is upstream's Node authorizer: what a kubelet
// (system:node:NAME in system:nodes) may do through the API. It reads only
// the objects its node needs — the secrets, config maps, claims, volumes
// and service accounts named by pods bound to the node, the volumes bound
// to those claims and the secrets those volumes name, the volume
// attachments to the node — its own Node, Lease and CSINode, the pods bound
// to it; everything else a kubelet asks is answered by the rules of
// upstream's system:node role (Rules). Other users get NoOpinion.
//
// The apiserver feeds the authorizer from its watch caches (Update on add
// and update, Delete on delete, for pods, persistent volumes and volume
// attachments) and asks it on every request. An answer is a few map
// lookups under a read lock; the relationships are kept as reference
// counts per node, so that deleting one of two pods that use a secret
// keeps the node's access, and deleting or moving the last one revokes it.
package node

import (
	"context"
	"fmt"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"orch/internal/apiserver/authz"
)

// NodeLeaseNamespace holds the kubelets' heartbeat leases.
const NodeLeaseNamespace = "kube-node-lease"

// Authorizer is the Node authorizer. The zero value is not usable; use New.
type Authorizer struct {
	rules []rbacv1.PolicyRule

	mu sync.RWMutex
	// reach counts, per object and node, the pods bound to the node that
	// name the object (for attachments: the attachment itself).
	reach           map[key]map[string]int
	pods            map[nsName]*podEntry
	volumes         map[string]*volumeEntry
	volumesByClaim  map[nsName]map[string]struct{}
	volumesBySecret map[nsName]map[string]struct{}
	attachments     map[string]string
}

var _ authz.Authorizer = (*Authorizer)(nil)

// New returns a Node authorizer that knows no objects yet.
func New() *Authorizer {
	return &Authorizer{
		rules:           Rules,
		reach:           map[key]map[string]int{},
		pods:            map[nsName]*podEntry{},
		volumes:         map[string]*volumeEntry{},
		volumesByClaim:  map[nsName]map[string]struct{}{},
		volumesBySecret: map[nsName]map[string]struct{}{},
		attachments:     map[string]string{},
	}
}

// nodeIdentity is upstream's node identifier: a user named system:node:NAME
// in the system:nodes group is a node; name may be empty.
func nodeIdentity(u authz.User) (name string, isNode bool) {
	name, ok := strings.CutPrefix(u.Name, authz.NodeUserPrefix)
	if !ok || !u.InGroup(authz.NodesGroup) {
		return "", false
	}
	return name, true
}

// Authorize answers a kubelet's request; it has no opinion on anyone
// else's. A list or watch naming one object by a metadata.name field
// selector is treated as a request for that object, as upstream's request
// attributes do.
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	node, isNode := nodeIdentity(attrs.User)
	if !isNode {
		return authz.NoOpinion, "", nil
	}
	if node == "" {
		return authz.NoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
	}
	if attrs.ResourceRequest {
		if attrs.Name == "" && (attrs.Verb == "list" || attrs.Verb == "watch") {
			attrs.Name = nameFromSelector(attrs.FieldSelector)
		}
		switch attrs.APIGroup + "/" + attrs.Resource {
		case "/secrets":
			return a.read(node, secretKind, attrs)
		case "/configmaps":
			return a.read(node, configMapKind, attrs)
		case "/persistentvolumeclaims":
			if attrs.Subresource == "status" {
				return a.statusUpdate(node, claimKind, attrs)
			}
			return a.get(node, claimKind, attrs)
		case "/persistentvolumes":
			return a.get(node, volumeKind, attrs)
		case "storage.k8s.io/volumeattachments":
			return a.get(node, attachmentKind, attrs)
		case "/serviceaccounts":
			if attrs.Verb == "get" && attrs.Subresource == "" {
				return a.read(node, serviceAccountKind, attrs)
			}
			return a.createToken(node, attrs)
		case "coordination.k8s.io/leases":
			return lease(node, attrs)
		case "storage.k8s.io/csinodes":
			return csiNode(node, attrs)
		case "/nodes":
			return nodeObject(node, attrs)
		case "/pods":
			return a.pod(node, attrs)
		}
	}
	if rulesAllow(attrs, a.rules) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

// read allows get, list and watch of one namespaced object related to node.
func (a *Authorizer) read(node string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return authz.NoOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authz.NoOpinion, "cannot read subresource", nil
	}
	if attrs.Namespace == "" {
		return authz.NoOpinion, "can only read namespaced object of this type", nil
	}
	return a.relation(node, k, attrs)
}

// get allows get of one object related to node.
func (a *Authorizer) get(node string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Verb != "get" {
		return authz.NoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authz.NoOpinion, "cannot get subresource", nil
	}
	return a.relation(node, k, attrs)
}

// statusUpdate allows update and patch of the status of an object related
// to node (NodeRestriction limits what the update may change).
func (a *Authorizer) statusUpdate(node string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Verb != "update" && attrs.Verb != "patch" {
		return authz.NoOpinion, "can only get/update/patch this type", nil
	}
	return a.relation(node, k, attrs)
}

// relation allows the request when the named object is related to node.
func (a *Authorizer) relation(node string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Name == "" {
		return authz.NoOpinion, "No Object name found", nil
	}
	if !a.hasRelation(node, k, attrs.Namespace, attrs.Name) {
		return authz.NoOpinion, noRelation(node), nil
	}
	return authz.Allow, "", nil
}

func (a *Authorizer) hasRelation(node string, k kind, namespace, name string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.related(node, key{k, namespace, name})
}

func noRelation(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// createToken allows a token for a service account a pod on node uses
// (NodeRestriction checks the token's bound pod).
func (a *Authorizer) createToken(node string, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Verb != "create" || attrs.Name == "" {
		return authz.NoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.Subresource != "token" {
		return authz.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	if !a.hasRelation(node, serviceAccountKind, attrs.Namespace, attrs.Name) {
		return authz.NoOpinion, noRelation(node), nil
	}
	return authz.Allow, "", nil
}

// lease allows the node's own heartbeat lease. A create names no object
// yet; NodeRestriction checks its name.
func lease(node string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authz.NoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != NodeLeaseNamespace {
		return authz.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace), nil
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return authz.NoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authz.Allow, "", nil
}

// csiNode allows the node's own CSINode; NodeRestriction checks a create.
func csiNode(node string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authz.NoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	}
	if attrs.Subresource != "" {
		return authz.NoOpinion, "cannot authorize CSINode subresources", nil
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return authz.NoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return authz.Allow, "", nil
}

// nodeObject allows writes to Node objects (NodeRestriction limits them to
// the node's own) and reads of the node's own Node only, by name, so that a
// kubelet can look for its Node before registering it.
func nodeObject(node string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "create", "update", "patch":
			return authz.Allow, "", nil
		case "get", "list", "watch":
			switch attrs.Name {
			case node:
				return authz.Allow, "", nil
			case "":
				return authz.NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
			default:
				return authz.NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, attrs.Name), nil
			}
		}
	case "status":
		if attrs.Verb == "update" || attrs.Verb == "patch" {
			return authz.Allow, "", nil
		}
	}
	return authz.NoOpinion, "", nil
}

// pod allows reading the pods bound to node (one by name, or a list or
// watch with the spec.nodeName=NODE field selector), creating and deleting
// pods, updating pod status and evicting pods; NodeRestriction limits the
// writes to mirror pods and pods bound to the node.
func (a *Authorizer) pod(node string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "get":
			return a.get(node, podKind, attrs)
		case "list", "watch":
			if selectsField(attrs.FieldSelector, "spec.nodeName", node) {
				return authz.Allow, "", nil
			}
			if attrs.Name != "" {
				return a.relation(node, podKind, attrs)
			}
			return authz.NoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			return authz.Allow, "", nil
		}
	case "status":
		if attrs.Verb == "update" || attrs.Verb == "patch" {
			return authz.Allow, "", nil
		}
	case "eviction":
		if attrs.Verb == "create" {
			return authz.Allow, "", nil
		}
	}
	return authz.NoOpinion, "", nil
}

// selectsField reports whether the field selector requires field=value.
func selectsField(selector, field, value string) bool {
	if selector == "" {
		return false
	}
	// The kubelet's own selector, "field=value" alone, without parsing it
	// (a node name needs no escaping).
	if rest, ok := strings.CutPrefix(selector, field+"="); ok {
		if rest == value || rest == "="+value {
			return true
		}
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return false
	}
	for _, r := range sel.Requirements() {
		if r.Field == field && r.Operator == selection.Equals && r.Value == value {
			return true
		}
	}
	return false
}

// nameFromSelector is the object a metadata.name=NAME field selector
// names, or "".
func nameFromSelector(selector string) string {
	if !strings.Contains(selector, "metadata.name") {
		return ""
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return ""
	}
	name, _ := sel.RequiresExactMatch("metadata.name")
	if len(path.IsValidPathSegmentName(name)) > 0 {
		return ""
	}
	return name
}
