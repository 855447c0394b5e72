package certificates

import (
	"context"
	"crypto/x509"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/worker"
)

// autoApproved is the reason of the Approved condition the approver writes.
const autoApproved = "AutoApproved"

// recognizer is a kind of request the approver approves when a
// SubjectAccessReview allows its requester the permission.
type recognizer struct {
	// subresource of certificatesigningrequests the requester must be
	// allowed to create.
	subresource string
	recognize   func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	message     string
}

// recognizers are upstream's, most specific first: a node renewing its own
// client certificate, then anyone asking for a node client certificate.
var recognizers = []recognizer{
	{subresource: "selfnodeclient", recognize: isSelfNodeClient,
		message: "Auto approving self kubelet client certificate after SubjectAccessReview."},
	{subresource: "nodeclient", recognize: isNodeClient,
		message: "Auto approving kubelet client certificate after SubjectAccessReview."},
}

// isNodeClient: a request to kube-apiserver-client-kubelet that keeps its
// rules.
func isNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		validateNodeClient(req, csr.Spec.Usages) == nil
}

// isSelfNodeClient: a node client request whose requester is the node the
// certificate is for.
func isSelfNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClient(csr, req)
}

// recognized are the recognizers of csr, whose request is req, in order.
func recognized(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []recognizer {
	var out []recognizer
	for _, r := range recognizers {
		if r.recognize(csr, req) {
			out = append(out, r)
		}
	}
	return out
}

// accessReview is the SubjectAccessReview asking whether the requester of
// csr may create certificatesigningrequests/subresource.
func accessReview(csr *certificatesv1.CertificateSigningRequest, subresource string) *authorizationv1.SubjectAccessReview {
	var extra map[string]authorizationv1.ExtraValue
	if len(csr.Spec.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
		for k, v := range csr.Spec.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Version: "*", Resource: "certificatesigningrequests",
			Subresource: subresource, Verb: "create",
		},
	}}
}

// approve approves the request named key when it is a node client request
// its requester may have approved automatically. A recognized request whose
// requester is not allowed is looked at again with back-off, as upstream
// does (the permission may be granted later).
func (c *Controller) approve(ctx context.Context, key string) (worker.Result, error) {
	csr := c.pending(key)
	if csr == nil {
		return worker.Result{}, nil
	}
	if approved, denied := approval(csr); approved || denied {
		return worker.Result{}, nil
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return worker.Result{}, worker.Terminal(fmt.Errorf("parse the request of csr %q: %w", key, err))
	}
	candidates := recognized(csr, req)
	for _, r := range candidates {
		review, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, accessReview(csr, r.subresource), metav1.CreateOptions{})
		if err != nil {
			return worker.Result{}, fmt.Errorf("review whether %q may have csr %q approved: %w", csr.Spec.Username, key, err)
		}
		if !review.Status.Allowed {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: autoApproved, Message: r.message,
		})
		if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("approve csr %q: %w", key, err)
		}
		c.log.Info("approved a node client certificate request", "csr", key, "requester", csr.Spec.Username, "permission", r.subresource)
		return worker.Result{}, nil
	}
	if len(candidates) > 0 {
		c.log.Debug("node client certificate request not approved: its requester lacks the permission", "csr", key, "requester", csr.Spec.Username)
		return worker.Result{Requeue: true}, nil
	}
	return worker.Result{}, nil
}
