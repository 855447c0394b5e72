package apiserver

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// The certificates admission plugins, as upstream's:
// CertificateSubjectRestriction refuses a request to the
// kube-apiserver-client signer for the system:masters group;
// CertificateApproval lets only a user allowed to approve for a request's
// signer approve or deny it; CertificateSigning lets only a user allowed
// to sign for it write its certificate.

var csrResource = certificatesv1.Resource("certificatesigningrequests")

// admitCSRSubject is CertificateSubjectRestriction, on create.
func (s *Server) admitCSRSubject(csr *certificatesv1.CertificateSigningRequest) error {
	if !s.plugins.on(pluginCertificateSubjectRestriction) || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return apierrors.NewBadRequest("unable to parse csr: PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("unable to parse csr: %v", err))
	}
	if slices.Contains(req.Subject.Organization, authz.SystemPrivilegedGroup) {
		return apierrors.NewForbidden(csrResource, csr.Name,
			fmt.Errorf("use of %s signer with %s group is not allowed", csr.Spec.SignerName, authz.SystemPrivilegedGroup))
	}
	return nil
}

// admitCSRUpdate is CertificateApproval (the approval subresource) and
// CertificateSigning (a status write that changes the certificate).
func (s *Server) admitCSRUpdate(ctx context.Context, subresource string, csr, old *certificatesv1.CertificateSigningRequest) error {
	var verb string
	switch {
	case subresource == "approval" && s.plugins.on(pluginCertificateApproval):
		verb = "approve"
	case subresource == "status" && s.plugins.on(pluginCertificateSigning) && !bytes.Equal(csr.Status.Certificate, old.Status.Certificate):
		verb = "sign"
	default:
		return nil
	}
	user, ok := filters.UserFrom(ctx)
	if !ok {
		return nil // the server's own loopback
	}
	if !s.allowedForSigner(ctx, user, verb, old.Spec.SignerName) {
		return apierrors.NewForbidden(csrResource, csr.Name, fmt.Errorf("user not permitted to %s requests with signerName %q", verb, old.Spec.SignerName))
	}
	return nil
}

// allowedForSigner: user may verb the signer named signerName, or every
// signer of its domain (DOMAIN/*), as upstream's IsAuthorizedForSignerName.
func (s *Server) allowedForSigner(ctx context.Context, user authz.User, verb, signerName string) bool {
	attrs := authz.Attributes{User: user, Verb: verb, ResourceRequest: true, APIGroup: certificatesv1.GroupName,
		APIVersion: "*", Resource: "signers", Name: signerName}
	if s.allowed(ctx, attrs) {
		return true
	}
	domain, _, found := strings.Cut(signerName, "/")
	if !found {
		return false
	}
	attrs.Name = domain + "/*"
	return s.allowed(ctx, attrs)
}
