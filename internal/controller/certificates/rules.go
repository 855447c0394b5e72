package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// nodeUserPrefix starts the user name, and the common name of the
// certificates, of a node: system:node:NAME.
const nodeUserPrefix = "system:node:"

// nodesGroup is the one organization of a node's certificates.
const nodesGroup = "system:nodes"

// The ways a request breaks its signer's rules; the messages are
// upstream's, which users and tools see in the Failed condition.
var (
	errNotNodesOrganization = errors.New("subject organization is not system:nodes")
	errNotNodeCommonName    = errors.New("subject common name does not begin with system:node:")
	errNoDNSOrIPSAN         = errors.New("DNS or IP subjectAltName is required")
	errDNSSAN               = errors.New("DNS subjectAltNames are not allowed")
	errEmailSAN             = errors.New("Email subjectAltNames are not allowed")
	errIPSAN                = errors.New("IP subjectAltNames are not allowed")
	errURISAN               = errors.New("URI subjectAltNames are not allowed")
)

// The usages a node's client and serving certificates may have: exactly
// these, with or without key encipherment (which only RSA keys use).
var (
	nodeClientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	nodeServingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

// ValidateRequest checks a certificate request and the usages it asks for
// against the rules of signerName. known is false for a signer this
// controller does not sign for (err is then nil); otherwise err, when not
// nil, says which rule the request breaks.
func ValidateRequest(signerName string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (known bool, err error) {
	switch signerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return true, validateNodeClient(req, usages)
	case certificatesv1.KubeletServingSignerName:
		return true, validateNodeServing(req, usages)
	case certificatesv1.KubeAPIServerClientSignerName:
		return true, validateClientUsages(usages)
	}
	return false, nil
}

// validateNodeClient: a node's client certificate, system:node:NAME in
// system:nodes, with no subject alternative names.
func validateNodeClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !slices.Equal(req.Subject.Organization, []string{nodesGroup}):
		return errNotNodesOrganization
	case len(req.DNSNames) > 0:
		return errDNSSAN
	case len(req.EmailAddresses) > 0:
		return errEmailSAN
	case len(req.IPAddresses) > 0:
		return errIPSAN
	case len(req.URIs) > 0:
		return errURISAN
	case !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix):
		return errNotNodeCommonName
	}
	return checkNodeUsages(usages, nodeClientUsages)
}

// validateNodeServing: a kubelet's serving certificate, system:node:NAME in
// system:nodes, for at least one DNS name or IP address.
func validateNodeServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	switch {
	case !slices.Equal(req.Subject.Organization, []string{nodesGroup}):
		return errNotNodesOrganization
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errNoDNSOrIPSAN
	case len(req.EmailAddresses) > 0:
		return errEmailSAN
	case len(req.URIs) > 0:
		return errURISAN
	}
	if err := checkNodeUsages(usages, nodeServingUsages); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Subject.CommonName, nodeUserPrefix) {
		return errNotNodeCommonName
	}
	return nil
}

// checkNodeUsages: usages are exactly want, or want and key encipherment.
func checkNodeUsages(usages, want []certificatesv1.KeyUsage) error {
	withRSA := append(slices.Clone(want), certificatesv1.UsageKeyEncipherment)
	if sameUsages(usages, want) || sameUsages(usages, withRSA) {
		return nil
	}
	names := make([]string, len(withRSA))
	for i, u := range withRSA {
		names[i] = string(u)
	}
	slices.Sort(names)
	return fmt.Errorf("usages did not match %v", names)
}

// validateClientUsages: a client certificate of the apiserver has client
// auth, and may have digital signature and key encipherment, nothing else.
// Its subject is the apiserver's CertificateSubjectRestriction admission's
// business.
func validateClientUsages(usages []certificatesv1.KeyUsage) error {
	clientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !clientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// sameUsages compares usages as sets.
func sameUsages(a, b []certificatesv1.KeyUsage) bool {
	for _, u := range a {
		if !slices.Contains(b, u) {
			return false
		}
	}
	for _, u := range b {
		if !slices.Contains(a, u) {
			return false
		}
	}
	return true
}

// parseRequest decodes spec.request: one PEM CERTIFICATE REQUEST.
func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// approval tells whether csr has an Approved and a Denied condition (of
// any status, as upstream reads them).
func approval(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, c := range csr.Status.Conditions {
		approved = approved || c.Type == certificatesv1.CertificateApproved
		denied = denied || c.Type == certificatesv1.CertificateDenied
	}
	return approved, denied
}

// hasTrueCondition tells whether csr has a condition of type t whose status
// is True or empty.
func hasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && (c.Status == "" || c.Status == corev1.ConditionTrue) {
			return true
		}
	}
	return false
}
