package podcertificaterequests

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on an issued certificate.
const (
	maxChainSize   = 100 * 1024
	minLifetime    = time.Hour
	refreshMargin  = 10 * time.Minute // between beginRefreshAt and either end of the certificate
	notBeforeSkew  = 5 * time.Minute  // between notBefore and the server's clock
	issuedType     = certificatesv1.PodCertificateRequestConditionTypeIssued
	deniedType     = certificatesv1.PodCertificateRequestConditionTypeDenied
	failedType     = certificatesv1.PodCertificateRequestConditionTypeFailed
	finalNotice    = "immutable after PodCertificateRequest is issued, denied, or failed"
	onlyConditions = "non-condition status fields must be empty when denying or failing the PodCertificateRequest"
	pendingNotice  = `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`
)

var (
	statusPath    = field.NewPath("status")
	chainPath     = statusPath.Child("certificateChain")
	notBeforePath = statusPath.Child("notBefore")
	notAfterPath  = statusPath.Child("notAfter")
	refreshPath   = statusPath.Child("beginRefreshAt")
)

// validateStatusUpdate is upstream's check of a write through /status at
// time now: at most one of Issued, Denied and Failed, True; a final
// status never changes; a denial or failure sets only conditions; an
// issue sets a chain whose leaf is for the request's key, with times that
// match it; a pending status does not change.
func validateStatusUpdate(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	conditions := statusPath.Child("conditions")
	var errs field.ErrorList
	final := 0
	for i, c := range pcr.Status.Conditions {
		switch c.Type {
		case issuedType, deniedType, failedType:
			if final++; final > 1 {
				errs = append(errs, field.Invalid(conditions.Index(i).Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				errs = append(errs, field.NotSupported(conditions.Index(i).Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			errs = append(errs, field.NotSupported(conditions.Index(i).Child("type"), c.Type, []string{issuedType, deniedType, failedType}))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(pcr.Status.Conditions, conditions)...)
	if len(errs) > 0 {
		return errs
	}
	switch {
	case has(old, issuedType) || has(old, deniedType) || has(old, failedType):
		return unchanged(pcr.Status, old.Status, finalNotice)
	case has(pcr, deniedType) || has(pcr, failedType):
		return unchanged(pcr.Status, certificatesv1.PodCertificateRequestStatus{Conditions: pcr.Status.Conditions}, onlyConditions)
	case has(pcr, issuedType):
		return validateIssued(pcr, old, now)
	}
	return unchanged(pcr.Status, old.Status, pendingNotice)
}

// has is true when pcr has a True condition of type t.
func has(pcr *certificatesv1.PodCertificateRequest, t string) bool {
	return meta.IsStatusConditionTrue(pcr.Status.Conditions, t)
}

// unchanged wants status to be want.
func unchanged(status, want certificatesv1.PodCertificateRequestStatus, detail string) field.ErrorList {
	if apiequality.Semantic.DeepEqual(status, want) {
		return nil
	}
	return field.ErrorList{field.Invalid(statusPath, field.OmitValueType{}, detail)}
}

// validateIssued checks the chain and times of an issued request. Like
// upstream's, it stops at the first problem.
func validateIssued(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	status := pcr.Status
	chain := status.CertificateChain
	if len(chain) > maxChainSize {
		return field.ErrorList{field.TooLong(chainPath, chain, maxChainSize)}
	}
	leafBlock, rest := pem.Decode([]byte(chain))
	if leafBlock == nil {
		return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must contain at least one certificate")}
	}
	if leafBlock.Type != "CERTIFICATE" {
		return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return field.ErrorList{field.Invalid(chainPath, chain, "leaf certificate does not parse as valid X.509")}
	}
	errs := validateLeafNames(leaf)
	key, keyErrs := requestedKey(old)
	if keyErrs != nil {
		return append(errs, keyErrs...)
	}
	if !key.Equal(leaf.PublicKey) {
		return append(errs, field.Invalid(chainPath, chain, "leaf certificate was not issued to the requested public key"))
	}
	if status.NotBefore == nil {
		errs = append(errs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if status.NotAfter == nil {
		errs = append(errs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if status.BeginRefreshAt == nil {
		errs = append(errs, field.Required(refreshPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(errs) > 0 {
		return errs
	}
	notBefore, notAfter, refresh := status.NotBefore.Time, status.NotAfter.Time, status.BeginRefreshAt.Time
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	switch {
	case !notBefore.Equal(leaf.NotBefore):
		return field.ErrorList{field.Invalid(notBeforePath, notBefore, "must be set to the NotBefore time encoded in the leaf certificate")}
	case !notBefore.After(now.Add(-notBeforeSkew)) || !notBefore.Before(now.Add(notBeforeSkew)):
		return field.ErrorList{field.Invalid(notBeforePath, notBefore, "must be set to within 5 minutes of kube-apiserver's current time")}
	case !notAfter.Equal(leaf.NotAfter):
		return field.ErrorList{field.Invalid(notAfterPath, notAfter, "must be set to the NotAfter time encoded in the leaf certificate")}
	case lifetime < minLifetime:
		return field.ErrorList{field.Invalid(chainPath, lifetime, "leaf certificate lifetime must be >= 1 hour")}
	case lifetime > time.Duration(*pcr.Spec.MaxExpirationSeconds)*time.Second:
		return field.ErrorList{field.Invalid(chainPath, lifetime, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *pcr.Spec.MaxExpirationSeconds))}
	case refresh.Before(notBefore.Add(refreshMargin)):
		return field.ErrorList{field.Invalid(refreshPath, refresh, "must be at least 10 minutes after status.notBefore")}
	case refresh.After(notAfter.Add(-refreshMargin)):
		return field.ErrorList{field.Invalid(refreshPath, refresh, "must be at least 10 minutes before status.notAfter")}
	}
	// The rest of the chain cannot be verified without its root; each
	// block must at least be a certificate.
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil
		}
		if block.Type != "CERTIFICATE" {
			return field.ErrorList{field.Invalid(chainPath, chain, "issued certificate chain must consist entirely of CERTFICATE PEM blocks")}
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return field.ErrorList{field.Invalid(chainPath, chain, "intermediate certificate does not parse as valid X.509")}
		}
	}
}

// validateLeafNames refuses empty or malformed DNS names and bad email
// addresses in the leaf certificate.
func validateLeafNames(leaf *x509.Certificate) field.ErrorList {
	var errs field.ErrorList
	for _, name := range leaf.DNSNames {
		if name == "" {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate should not contain empty DNSName"))
		}
		if strings.Contains(name, "..") {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate's DNSName should not contain '..'"))
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			errs = append(errs, field.Invalid(chainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, address := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(address); err != nil {
			errs = append(errs, field.Invalid(chainPath, address, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	return errs
}

// publicKey is what every key type crypto/x509 parses implements.
type publicKey interface {
	Equal(crypto.PublicKey) bool
}

// requestedKey is the public key of the request's stub certificate request.
func requestedKey(pcr *certificatesv1.PodCertificateRequest) (publicKey, field.ErrorList) {
	req, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	key, ok := req.PublicKey.(publicKey)
	if !ok {
		return nil, field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	return key, nil
}
