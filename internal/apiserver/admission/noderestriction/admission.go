// Package noderestriction is upstream's NodeRestriction admission plugin as
// a pure function: it limits what a kubelet (system:node:NAME in
// system:nodes) may write once the authorizers let its request through.
// A node may create only mirror pods bound to itself that name no other API
// object, delete and evict only pods bound to itself, update the status of
// those pods only, create and update only its own Node (without touching
// its taints, owner references, configSource or the labels reserved to the
// cluster's administrators), update only the status fields of a claim that
// the kubelet reports, ask for tokens only bound to pods on itself and for
// audiences those pods use, and write only its own Lease and CSINode.
// Requests of other users, and operations other than CREATE, UPDATE and
// DELETE, pass untouched.
//
// A node may also create PodCertificateRequests only for pods on itself
// that mount the signer, CertificateSigningRequests for the kubelet signers
// only with its own CN, and create and delete only its own ResourceSlices.
//
// The apiserver calls Admit after authorization, with the objects its watch
// caches hold; Admit reads nothing else.
package noderestriction

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/authz"
)

// Operations, as admission names them.
const (
	Create  = "CREATE"
	Update  = "UPDATE"
	Delete  = "DELETE"
	Connect = "CONNECT"
)

// Request is one admission request.
type Request struct {
	User authz.User
	// Operation is Create, Update, Delete or Connect.
	Operation string
	// APIGroup, Resource and Subresource say what is written, e.g. "",
	// "pods", "status".
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	// Name is the object's name; for a create, Admit takes it from Object
	// when it is empty, as upstream's create handler does.
	Name string
	// Object is the object as the client sent it (a create or update, an
	// Eviction, a TokenRequest before its audiences are defaulted);
	// OldObject the stored object of an update.
	Object, OldObject runtime.Object
}

// Lookup gives Admit the stored objects some checks need. A getter returns
// an apierrors NotFound error for a missing object (Admit returns it
// unchanged, as upstream does); a nil getter finds nothing.
type Lookup struct {
	// Pod: a pod to delete or evict, a token's bound pod.
	Pod func(namespace, name string) (*corev1.Pod, error)
	// Node: the node a mirror pod's owner reference names (its UID).
	Node func(name string) (*corev1.Node, error)
	// Claim, Volume and CSIDriver: whether a pod's CSI volumes use a
	// token audience (ServiceAccountNodeAudienceRestriction).
	Claim     func(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	Volume    func(name string) (*corev1.PersistentVolume, error)
	CSIDriver func(name string) (*storagev1.CSIDriver, error)
	// ServiceAccount: the one a PodCertificateRequest names (its UID).
	ServiceAccount func(namespace, name string) (*corev1.ServiceAccount, error)
	// Authorizer answers whether a node may ask for a token audience its
	// pod does not use (verb request-serviceaccounts-token-audience on the
	// audience); nil refuses.
	Authorizer authz.Authorizer
}

// Admit returns nil when req may proceed, a 403 Forbidden with upstream's
// message when a node may not do it, or a getter's error (e.g. NotFound).
func Admit(ctx context.Context, req Request, l Lookup) error {
	node, isNode := nodeIdentity(req.User)
	if !isNode {
		return nil
	}
	switch req.Operation {
	case Create, Update, Delete:
	default:
		return nil
	}
	if req.Operation == Create && req.Name == "" && req.Object != nil {
		if m, err := meta.Accessor(req.Object); err == nil {
			req.Name = m.GetName()
		}
	}
	if node == "" {
		return forbidden(req, fmt.Errorf("could not determine node from user %q", req.User.Name))
	}
	switch req.APIGroup + "/" + req.Resource {
	case "/pods":
		switch req.Subresource {
		case "":
			return admitPod(node, req, l)
		case "status":
			return admitPodStatus(node, req)
		case "eviction":
			return admitEviction(node, req, l)
		}
		return forbidden(req, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", req.Subresource))
	case "/nodes":
		return admitNode(node, req)
	case "/persistentvolumeclaims":
		if req.Subresource != "status" {
			return forbidden(req, fmt.Errorf("may only update PVC status"))
		}
		return admitClaimStatus(node, req)
	case "/serviceaccounts":
		return admitToken(ctx, node, req, l)
	case "coordination.k8s.io/leases":
		return admitLease(node, req)
	case "storage.k8s.io/csinodes":
		return admitCSINode(node, req)
	case "certificates.k8s.io/podcertificaterequests":
		return admitPodCertificateRequest(ctx, node, req, l)
	case "certificates.k8s.io/certificatesigningrequests":
		return admitCSR(node, req)
	case "resource.k8s.io/resourceslices":
		return admitResourceSlice(node, req)
	}
	return nil
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

// forbidden is upstream's admission.NewForbidden: `RESOURCE "NAME" is
// forbidden: ERR`, naming the object by the request's name, else by the
// object's name or generateName, else "Unknown".
func forbidden(req Request, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := req.Name
	if name == "" {
		name = "Unknown"
		if req.Object != nil {
			if m, aerr := meta.Accessor(req.Object); aerr != nil {
				name = "Unknown/errorGettingName"
			} else if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: req.APIGroup, Resource: req.Resource}, name, err)
}

// lookupPod fetches a stored pod; a missing getter finds nothing.
func lookupPod(l Lookup, namespace, name string) (*corev1.Pod, error) {
	if l.Pod == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return l.Pod(namespace, name)
}

// storedPod is a pod a request acts on: NotFound as it is, another error
// as a Forbidden.
func storedPod(req Request, l Lookup, namespace, name string) (*corev1.Pod, error) {
	pod, err := lookupPod(l, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, forbidden(req, err)
	}
	return pod, nil
}
