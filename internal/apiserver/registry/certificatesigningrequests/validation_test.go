package certificatesigningrequests

import (
	"bytes"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func TestValidateCreate(t *testing.T) {
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	denied := cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)
	tests := []struct {
		name   string
		change func(csr *certificatesv1.CertificateSigningRequest)
		want   []want
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil},
		{"no expiration", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.ExpirationSeconds = nil }, nil},
		{"ten minutes", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.ExpirationSeconds = ptr.To(int32(600)) }, nil},
		{"not PEM", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Request = []byte("hello") },
			[]want{{"FieldValueInvalid spec.request", "PEM block type must be CERTIFICATE REQUEST"}}},
		{"a certificate, not a request", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Request = pemCertificate(t) },
			[]want{{"FieldValueInvalid spec.request", "PEM block type must be CERTIFICATE REQUEST"}}},
		{"not DER", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("junk")})
		}, []want{{"FieldValueInvalid spec.request", "asn1"}}},
		{"bad signature", func(csr *certificatesv1.CertificateSigningRequest) {
			block, _ := pem.Decode(csr.Spec.Request)
			block.Bytes[len(block.Bytes)-3] ^= 0xff
			csr.Spec.Request = pem.EncodeToMemory(block)
		}, []want{{"FieldValueInvalid spec.request", ""}}},
		{"no usages", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.Usages = nil },
			[]want{{"FieldValueRequired spec.usages", ""}}},
		{"unknown and duplicate usages", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = []certificatesv1.KeyUsage{"server auth", "teleport", "server auth"}
		}, []want{{"FieldValueNotSupported spec.usages[1]", `"any", "cert sign"`}, {"FieldValueDuplicate spec.usages[2]", ""}}},
		{"no signer", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "" },
			[]want{{"FieldValueRequired spec.signerName", ""}}},
		{"bad signer", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.SignerName = "example" },
			[]want{{"FieldValueInvalid spec.signerName", "of the form 'example.com/signer-name'"}}},
		{"legacy signer", func(csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.SignerName = "kubernetes.io/legacy-unknown"
		},
			[]want{{"FieldValueInvalid spec.signerName", "not allowed via this API version"}}},
		{"under ten minutes", func(csr *certificatesv1.CertificateSigningRequest) { csr.Spec.ExpirationSeconds = ptr.To(int32(599)) },
			[]want{{"FieldValueInvalid spec.expirationSeconds", "less than 600 seconds (10 minutes)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := request(t)
			tt.change(csr)
			registrytest.ExpectWant(t, validateCreate(csr), tt.want...)
		})
	}

	// The status is dropped on create; its checks are those of any write.
	statusTests := []struct {
		name   string
		status certificatesv1.CertificateSigningRequestStatus
		want   []want
	}{
		{"custom conditions", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			cond("ApprovalPatch", corev1.ConditionFalse), cond("Other", corev1.ConditionUnknown), approved}}, nil},
		{"approved and denied", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{approved, denied}},
			[]want{{"FieldValueInvalid status.conditions", "Approved and Denied conditions are mutually exclusive"}}},
		{"only true", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
			cond(certificatesv1.CertificateFailed, corev1.ConditionFalse)}}, []want{{"FieldValueNotSupported status.conditions[0].status", `"True"`}}},
		{"bad status", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond("X", "Maybe")}},
			[]want{{"FieldValueNotSupported status.conditions[0].status", `"False", "True", "Unknown"`}}},
		{"no type, no status, twice", certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{}, {}}},
			[]want{{"FieldValueRequired status.conditions[0].type", ""}, {"FieldValueRequired status.conditions[0].status", ""},
				{"FieldValueRequired status.conditions[1].type", ""}, {"FieldValueRequired status.conditions[1].status", ""},
				{"FieldValueDuplicate status.conditions[1].type", ""}}},
		{"a certificate", certificatesv1.CertificateSigningRequestStatus{Certificate: append(pemCertificate(t), pemCertificate(t)...)}, nil},
		{"not PEM", certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("junk")},
			[]want{{"FieldValueInvalid status.certificate", "must contain at least one CERTIFICATE PEM block"}}},
		{"a key", certificatesv1.CertificateSigningRequestStatus{Certificate: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")})},
			[]want{{"FieldValueInvalid status.certificate", `found "PRIVATE KEY"`}}},
		{"headers", certificatesv1.CertificateSigningRequestStatus{Certificate: withHeader(pemCertificate(t))},
			[]want{{"FieldValueInvalid status.certificate", "no PEM block headers"}}},
	}
	for _, tt := range statusTests {
		t.Run("status: "+tt.name, func(t *testing.T) {
			csr := request(t)
			csr.Status = tt.status
			registrytest.ExpectWant(t, validateCreate(csr), tt.want...)
		})
	}
}

func withHeader(data []byte) []byte {
	block, _ := pem.Decode(data)
	block.Headers = map[string]string{"Proc-Type": "4,ENCRYPTED"}
	return pem.EncodeToMemory(block)
}

// TestConformanceFlow writes a request as the CSR API operations
// conformance test does: a custom condition and Approved through
// /approval, then a certificate and a custom condition through /status,
// each with an annotation that stays.
func TestConformanceFlow(t *testing.T) {
	r := Resource()
	stored := request(t)
	registrytest.ExpectErrors(t, registrytest.Create(r, stored))

	write := func(sub string, change func(csr *certificatesv1.CertificateSigningRequest)) {
		t.Helper()
		csr := stored.DeepCopy()
		change(csr)
		registrytest.ExpectErrors(t, registrytest.UpdateSubresource(t, r, sub, csr, stored))
		stored = csr
	}
	write("approval", func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Annotations = map[string]string{"patchedapproval": "true"}
		csr.Status.Conditions = append(csr.Status.Conditions, cond("ApprovalPatch", corev1.ConditionTrue))
	})
	write("approval", func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Status.Conditions = append(csr.Status.Conditions, cond(certificatesv1.CertificateApproved, corev1.ConditionTrue))
	})
	certificate := pemCertificate(t)
	write("status", func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Annotations["patchedstatus"] = "true"
		csr.Status.Certificate = certificate
	})
	write("status", func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Status.Conditions = append(csr.Status.Conditions, cond("StatusUpdate", corev1.ConditionTrue))
	})

	var types []certificatesv1.RequestConditionType
	for _, c := range stored.Status.Conditions {
		types = append(types, c.Type)
		if c.LastUpdateTime.IsZero() || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no times: %+v", c.Type, c)
		}
	}
	if len(types) != 3 || types[0] != "ApprovalPatch" || types[1] != certificatesv1.CertificateApproved || types[2] != "StatusUpdate" {
		t.Errorf("conditions = %v", types)
	}
	if !bytes.Equal(stored.Status.Certificate, certificate) || stored.Annotations["patchedapproval"] != "true" || stored.Annotations["patchedstatus"] != "true" {
		t.Errorf("certificate or annotations lost: %v", stored.Annotations)
	}
}
