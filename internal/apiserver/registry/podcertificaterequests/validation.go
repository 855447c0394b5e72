package podcertificaterequests

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/certutil"
)

// Upstream's bounds on a request.
const (
	maxUIDLength          = 128
	maxStubRequestSize    = 10 * 1024
	minMaxExpiration      = 60 * 60           // an hour
	maxMaxExpiration      = 91 * 24 * 60 * 60 // 91 days
	kubernetesMaxLifetime = 24 * 60 * 60      // a day, for kubernetes.io signers
)

var stubPath = field.NewPath("spec", "stubPKCS10Request")

// validateCreate is upstream's validation of a new request: the signer,
// the user annotations, the pod, service account and node it is for, the
// lifetime it may have and the stub certificate request carrying its key.
func validateCreate(pcr *certificatesv1.PodCertificateRequest) field.ErrorList {
	spec, path := pcr.Spec, field.NewPath("spec")
	errs := certutil.ValidateSignerName(path.Child("signerName"), spec.SignerName)
	if spec.UnverifiedUserAnnotations != nil {
		errs = append(errs, validateUserAnnotations(path.Child("unverifiedUserAnnotations"), spec.UnverifiedUserAnnotations)...)
	}
	errs = append(errs, validateName(path.Child("podName"), spec.PodName)...)
	errs = append(errs, validateUID(path.Child("podUID"), spec.PodUID)...)
	errs = append(errs, validateName(path.Child("serviceAccountName"), spec.ServiceAccountName)...)
	errs = append(errs, validateUID(path.Child("serviceAccountUID"), spec.ServiceAccountUID)...)
	errs = append(errs, validateName(path.Child("nodeName"), string(spec.NodeName))...)
	errs = append(errs, validateUID(path.Child("nodeUID"), spec.NodeUID)...)
	if spec.MaxExpirationSeconds == nil {
		return append(errs, field.Required(path.Child("maxExpirationSeconds"), "must be set"))
	}
	highest := int32(maxMaxExpiration)
	if isKubernetesSigner(spec.SignerName) {
		highest = kubernetesMaxLifetime
	}
	if s := *spec.MaxExpirationSeconds; s < minMaxExpiration || s > highest {
		errs = append(errs, field.Invalid(path.Child("maxExpirationSeconds"), spec.MaxExpirationSeconds, fmt.Sprintf("must be in the range [%d, %d]", minMaxExpiration, highest)))
	}
	if len(spec.StubPKCS10Request) == 0 {
		// v1 has no pkixPublicKey and proofOfPossession, but upstream's
		// message still names them.
		return append(errs, field.Invalid(path, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubRequest(spec.StubPKCS10Request)...)
}

// validateName wants a DNS subdomain, as pod, service account and node
// names are.
func validateName(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateUID wants a UID of 1 to 128 characters.
func validateUID(path *field.Path, uid types.UID) field.ErrorList {
	switch {
	case uid == "":
		return field.ErrorList{field.Invalid(path, uid, "must not be empty")}
	case len(uid) > maxUIDLength:
		return field.ErrorList{field.TooLong(path, uid, maxUIDLength)}
	}
	return nil
}

// validateUserAnnotations wants domain-prefixed keys (in any case) and no
// more in all than metadata.annotations may hold.
func validateUserAnnotations(path *field.Path, annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	for k := range annotations {
		errs = append(errs, validation.IsDomainPrefixedKey(path, strings.ToLower(k))...)
	}
	if apivalidation.ValidateAnnotationsSize(annotations) != nil {
		errs = append(errs, field.TooLong(path, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

// isKubernetesSigner is true for the signers the Kubernetes project
// reserves: those of kubernetes.io and its subdomains.
func isKubernetesSigner(signer string) bool {
	domain, _, _ := strings.Cut(signer, "/")
	return domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}

// validateStubRequest wants a DER PKCS#10 request for an Ed25519, ECDSA
// (P-256, P-384, P-521) or RSA (3072, 4096 bits) key, signed by that key.
// Its content is the signer's business.
func validateStubRequest(der []byte) field.ErrorList {
	if len(der) > maxStubRequestSize {
		return field.ErrorList{field.TooLong(stubPath, der, maxStubRequestSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch key := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if key.Curve != elliptic.P256() && key.Curve != elliptic.P384() && key.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(stubPath, "curve "+key.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := key.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(stubPath, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if req.CheckSignature() != nil {
		return field.ErrorList{field.Invalid(stubPath, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}
