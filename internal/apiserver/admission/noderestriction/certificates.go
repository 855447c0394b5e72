package noderestriction

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/authz"
)

// PodCertificateSignerVerb is the verb a node needs on a signer name (with
// its "/" as ":", as the resource) and a service account (the name) to ask
// for pod certificates a pod on it does not mount.
const PodCertificateSignerVerb = "request-serviceaccounts-podcertificate-signer"

// admitPodCertificateRequest lets a node create a PodCertificateRequest
// only for a pod bound to itself (not a mirror pod), naming itself, the
// pod and its service account with their current UIDs, for a signer a
// podCertificate volume of the pod uses (or one it may ask for anyway).
// A UID that differs may be lag: a Conflict, which a retry may pass
// (upstream answers it with a 500).
func admitPodCertificateRequest(ctx context.Context, node string, req Request, l Lookup) error {
	if req.Operation != Create {
		return forbidden(req, fmt.Errorf("unexpected operation %v", req.Operation))
	}
	if req.Subresource != "" {
		return forbidden(req, fmt.Errorf("unexpected subresource %v", req.Subresource))
	}
	pcr, ok := req.Object.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	spec, ns := &pcr.Spec, req.Namespace
	if string(spec.NodeName) != node {
		return forbidden(req, fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", spec.NodeName, node))
	}
	n, err := lookupNode(l, node)
	if err != nil {
		return forbidden(req, fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", node, err))
	}
	if n.UID != spec.NodeUID {
		return lagged(req, fmt.Errorf("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", ns+"/"+spec.PodName, spec.NodeUID, n.UID))
	}
	pod, err := lookupPod(l, ns, spec.PodName)
	if err != nil {
		return forbidden(req, fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", ns+"/"+spec.PodName, err))
	}
	if spec.PodUID != pod.UID {
		return lagged(req, fmt.Errorf("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", ns+"/"+spec.PodName, spec.PodUID, pod.UID))
	}
	if pod.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("pod %q is not running on node %q named in the PodCertificateRequest", ns+"/"+spec.PodName, node))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return forbidden(req, fmt.Errorf("pod %q is a mirror pod", ns+"/"+spec.PodName))
	}
	if spec.ServiceAccountName != pod.Spec.ServiceAccountName {
		return forbidden(req, fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)",
			ns+"/"+spec.PodName, spec.ServiceAccountName, pod.Spec.ServiceAccountName))
	}
	if l.ServiceAccount == nil {
		return forbidden(req, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: not found", ns+"/"+spec.ServiceAccountName))
	}
	sa, err := l.ServiceAccount(ns, spec.ServiceAccountName)
	if err != nil {
		return forbidden(req, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", ns+"/"+spec.ServiceAccountName, err))
	}
	if spec.ServiceAccountUID != sa.UID {
		return lagged(req, fmt.Errorf("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)",
			ns+"/"+spec.PodName, spec.ServiceAccountUID, sa.UID))
	}
	if mountsSigner(pod, spec.SignerName) {
		return nil
	}
	d := authz.NoOpinion
	if l.Authorizer != nil {
		d, _, err = l.Authorizer.Authorize(ctx, authz.Attributes{User: req.User, Verb: PodCertificateSignerVerb, ResourceRequest: true,
			Namespace: ns, APIGroup: certificatesv1.GroupName, APIVersion: "v1",
			Resource: strings.ReplaceAll(spec.SignerName, "/", ":"), Name: spec.ServiceAccountName})
	}
	if d == authz.Allow {
		return nil
	}
	if err != nil {
		return forbidden(req, fmt.Errorf("error authorizing %s to request podcertificaterequests for signer %q: %w", req.User.Name, spec.SignerName, err))
	}
	return forbidden(req, fmt.Errorf("pod %q does not mount a podCertificate projected volume for signer %q", ns+"/"+spec.PodName, spec.SignerName))
}

// mountsSigner reports whether a projected volume of pod has a
// podCertificate source of signer.
func mountsSigner(pod *corev1.Pod, signer string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.PodCertificate != nil && s.PodCertificate.SignerName == signer {
				return true
			}
		}
	}
	return false
}

// admitCSR lets a node create a CertificateSigningRequest for the kubelet
// serving or kubelet client signers only with its own CN; other signers
// judge their requests themselves.
func admitCSR(node string, req Request) error {
	if req.Operation != Create {
		return nil
	}
	csr, ok := req.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return forbidden(req, errors.New("unable to parse csr: PEM block type must be CERTIFICATE REQUEST"))
	}
	parsed, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return forbidden(req, fmt.Errorf("unable to parse csr: %w", err))
	}
	if parsed.Subject.CommonName != authz.NodeUserPrefix+node {
		return forbidden(req, fmt.Errorf("can only create a node CSR with CN=%s%s", authz.NodeUserPrefix, node))
	}
	return nil
}

// admitResourceSlice lets a node create and delete only the
// ResourceSlices of its own node; the node authorizer checks the rest.
func admitResourceSlice(node string, req Request) error {
	var obj = req.Object
	verb := "create"
	switch req.Operation {
	case Create:
	case Delete:
		obj, verb = req.OldObject, "delete"
	default:
		return nil
	}
	slice, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", obj))
	}
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("can only %s ResourceSlice with the same NodeName as the requesting node", verb))
	}
	return nil
}

// lookupNode fetches a stored node; a missing getter finds nothing.
func lookupNode(l Lookup, name string) (*corev1.Node, error) {
	if l.Node == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return l.Node(name)
}

// lagged is a 409 Conflict for what the stored objects may not show yet.
func lagged(req Request, err error) error {
	name := req.Name
	if name == "" {
		name = "Unknown"
	}
	return apierrors.NewConflict(schema.GroupResource{Group: req.APIGroup, Resource: req.Resource}, name, err)
}
