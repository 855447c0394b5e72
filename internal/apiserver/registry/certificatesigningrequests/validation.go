package certificatesigningrequests

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/certutil"
)

const (
	// minExpirationSeconds is the shortest certificate a request may ask for.
	minExpirationSeconds = 600
	// legacyUnknownSignerName is v1beta1's signer of requests that named
	// none; v1 refuses it, except on requests stored with it.
	legacyUnknownSignerName = "kubernetes.io/legacy-unknown"
)

// usages are the key usages a request may ask for, sorted as upstream
// lists them in its error.
var usages = []string{
	"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
	"ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
	"server auth", "signing", "timestamping",
}

// rules say what a write may do, as upstream's validation options: what
// only one subresource may change, and what an update tolerates because
// the stored request already has it (compatibility with older data).
type rules struct {
	setApproval    bool // /approval may change the Approved and Denied conditions
	setCertificate bool // /status may set status.certificate

	bothApprovedAndDenied   bool
	legacySignerName        bool
	duplicateConditionTypes bool
	emptyConditionType      bool
	anyCertificate          bool
	unknownUsages           bool
	duplicateUsages         bool
}

// rulesFor are the rules of a write of csr over old (nil on create).
func rulesFor(csr, old *certificatesv1.CertificateSigningRequest) rules {
	if old == nil {
		return rules{}
	}
	approved := len(conditionsOf(old, certificatesv1.CertificateApproved)) > 0
	denied := len(conditionsOf(old, certificatesv1.CertificateDenied)) > 0
	duplicateTypes, emptyType := false, false
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		duplicateTypes = duplicateTypes || seen[c.Type]
		emptyType = emptyType || c.Type == ""
		seen[c.Type] = true
	}
	unknown, duplicate := false, false
	seenUsage := map[certificatesv1.KeyUsage]bool{}
	for _, u := range old.Spec.Usages {
		unknown = unknown || !slices.Contains(usages, string(u))
		duplicate = duplicate || seenUsage[u]
		seenUsage[u] = true
	}
	return rules{
		bothApprovedAndDenied:   approved && denied,
		legacySignerName:        old.Spec.SignerName == legacyUnknownSignerName,
		duplicateConditionTypes: duplicateTypes,
		emptyConditionType:      emptyType,
		anyCertificate:          bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || checkCertificates(old.Status.Certificate) != nil,
		unknownUsages:           unknown,
		duplicateUsages:         duplicate,
	}
}

// validateCreate is upstream's validation of a new request.
func validateCreate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateRequest(csr, rulesFor(csr, nil))
}

// validateRequest checks spec and status under r.
func validateRequest(csr *certificatesv1.CertificateSigningRequest, r rules) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !r.unknownUsages && !slices.Contains(usages, string(u)) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, usages))
		}
		if !r.duplicateUsages && seen[u] {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if csr.Spec.SignerName == legacyUnknownSignerName && !r.legacySignerName {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, certutil.ValidateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(csr.Status.Conditions, r)...)
	if !r.anyCertificate {
		if err := checkCertificates(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// checkRequest wants a PEM CERTIFICATE REQUEST whose signature holds.
func checkRequest(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// checkCertificates wants data empty, or PEM CERTIFICATE blocks only,
// without headers, each holding certificates that parse.
func checkCertificates(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// onlyTrue are the condition types whose status may only be True.
var onlyTrue = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed}

// validateConditions wants each condition to have a type (once) and a
// status (True for Approved, Denied and Failed), and never both Approved
// and Denied.
func validateConditions(conditions []certificatesv1.CertificateSigningRequestCondition, r rules) field.ErrorList {
	path := field.NewPath("status", "conditions")
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range conditions {
		if c.Type == "" && !r.emptyConditionType {
			errs = append(errs, field.Required(path.Index(i).Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		if slices.Contains(onlyTrue, c.Type) {
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(path.Index(i).Child("status"), ""))
		case !slices.Contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(path.Index(i).Child("status"), c.Status, allowed))
		}
		approved = approved || c.Type == certificatesv1.CertificateApproved
		denied = denied || c.Type == certificatesv1.CertificateDenied
		if !r.bothApprovedAndDenied && approved && denied && (c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied) {
			errs = append(errs, field.Invalid(path, c.Type, "Approved and Denied conditions are mutually exclusive"))
		}
		if seen[c.Type] && !r.duplicateConditionTypes {
			errs = append(errs, field.Duplicate(path.Index(i).Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

// validateUpdate is upstream's validation of a write over old under the
// rules of the main resource, /status or /approval (set in r): no Approved,
// Denied or Failed condition goes, only /approval touches Approved and
// Denied, only /status sets a certificate, and never over another.
func validateUpdate(csr, old *certificatesv1.CertificateSigningRequest, r rules) field.ErrorList {
	errs := validateRequest(csr, r)
	path := field.NewPath("status", "conditions")
	for _, t := range onlyTrue {
		if len(conditionsOf(csr, t)) < len(conditionsOf(old, t)) {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !r.setApproval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			now, before := conditionsOf(csr, t), conditionsOf(old, t)
			switch {
			case len(now) < len(before):
				// reported above
			case len(now) > len(before):
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(before, now):
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(before, now))))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		switch {
		case !r.setCertificate:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return errs
}

// conditionsOf returns the conditions of type t, in order.
func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}
