package noderestriction

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
)

// NodeLeaseNamespace holds the kubelets' heartbeat leases.
const NodeLeaseNamespace = "kube-node-lease"

// admitLease lets a node write only its own lease in kube-node-lease.
func admitLease(node string, req Request) error {
	if req.Namespace != NodeLeaseNamespace {
		return forbidden(req, fmt.Errorf("can only access leases in the %q system namespace", NodeLeaseNamespace))
	}
	name, err := writtenName(req)
	if err != nil {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if name != node {
		return forbidden(req, fmt.Errorf("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

// admitCSINode lets a node write only its own CSINode.
func admitCSINode(node string, req Request) error {
	name, err := writtenName(req)
	if err != nil {
		return forbidden(req, fmt.Errorf("unable to access the object name"))
	}
	if name != node {
		return forbidden(req, fmt.Errorf("can only access CSINode with the same name as the requesting node"))
	}
	return nil
}

// writtenName is the name of the object a request writes: for a create,
// the new object's (the request has none yet), else the request's.
func writtenName(req Request) (string, error) {
	if req.Operation != Create {
		return req.Name, nil
	}
	if req.Object == nil {
		return "", fmt.Errorf("no object")
	}
	m, err := meta.Accessor(req.Object)
	if err != nil {
		return "", err
	}
	return m.GetName(), nil
}
