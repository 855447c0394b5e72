package certificatesigningrequests

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

type conditions = []certificatesv1.CertificateSigningRequestCondition

// stored is an approved request as the apiserver keeps it, with a
// certificate when issued.
func stored(t *testing.T, issued bool) *certificatesv1.CertificateSigningRequest {
	csr := request(t)
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	approved.LastUpdateTime = metav1.NewTime(time.Unix(100, 0))
	approved.LastTransitionTime = approved.LastUpdateTime
	csr.Status.Conditions = conditions{approved}
	if issued {
		csr.Status.Certificate = pemCertificate(t)
	}
	return csr
}

// TestStatus: /status sets the certificate and other conditions, keeps
// the spec and the Approved and Denied conditions as stored.
func TestStatus(t *testing.T) {
	tests := []struct {
		name   string
		issued bool
		change func(t *testing.T, csr *certificatesv1.CertificateSigningRequest)
		want   []want
		check  func(t *testing.T, csr, old *certificatesv1.CertificateSigningRequest)
	}{
		{"issue", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Certificate = pemCertificate(t)
		}, nil, nil},
		{"spec is kept", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.SignerName, csr.Spec.Usages = "example.com/other", nil
		}, nil, func(t *testing.T, csr, old *certificatesv1.CertificateSigningRequest) {
			if !reflect.DeepEqual(csr.Spec, old.Spec) {
				t.Errorf("spec = %+v", csr.Spec)
			}
		}},
		{"approval is kept", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions[0].Reason = "Changed"
		}, nil, func(t *testing.T, csr, old *certificatesv1.CertificateSigningRequest) {
			if !reflect.DeepEqual(csr.Status.Conditions, old.Status.Conditions) {
				t.Errorf("conditions = %+v", csr.Status.Conditions)
			}
		}},
		{"failed", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = append(csr.Status.Conditions, cond(certificatesv1.CertificateFailed, corev1.ConditionTrue))
		}, nil, nil},
		{"no approving", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = append(csr.Status.Conditions, cond(certificatesv1.CertificateDenied, corev1.ConditionTrue))
		}, []want{{"FieldValueInvalid status.conditions", "mutually exclusive"}, {"FieldValueForbidden status.conditions", `may not add a condition of type "Denied"`}}, nil},
		{"no removing", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) { csr.Status.Conditions = nil },
			[]want{{"FieldValueForbidden status.conditions", `may not remove a condition of type "Approved"`}}, nil},
		{"no reissuing", true, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Certificate = pemCertificate(t)
		},
			[]want{{"FieldValueForbidden status.certificate", "may not modify existing certificate content"}}, nil},
		{"a bad certificate", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Certificate = []byte("junk")
		},
			[]want{{"FieldValueInvalid status.certificate", "at least one CERTIFICATE PEM block"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, tt.issued)
			csr := old.DeepCopy()
			tt.change(t, csr)
			registrytest.ExpectWant(t, registrytest.UpdateSubresource(t, Resource(), "status", csr, old), tt.want...)
			if tt.check != nil {
				tt.check(t, csr, old)
			}
		})
	}
}

// TestApproval: /approval changes the conditions and nothing else of the
// spec and status.
func TestApproval(t *testing.T) {
	tests := []struct {
		name   string
		issued bool
		change func(t *testing.T, csr *certificatesv1.CertificateSigningRequest)
		want   []want
	}{
		{"custom condition", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = append(csr.Status.Conditions, cond("ApprovalPatch", corev1.ConditionTrue))
		}, nil},
		{"reason changes", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions[0].Reason = "Changed"
		}, nil},
		{"certificate is kept", true, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) { csr.Status.Certificate = nil }, nil},
		{"not issued through approval", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Certificate = pemCertificate(t)
		}, nil},
		{"denied too", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Status.Conditions = append(csr.Status.Conditions, cond(certificatesv1.CertificateDenied, corev1.ConditionTrue))
		}, []want{{"FieldValueInvalid status.conditions", "mutually exclusive"}}},
		{"no removing", false, func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) { csr.Status.Conditions = nil },
			[]want{{"FieldValueForbidden status.conditions", `may not remove a condition of type "Approved"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, tt.issued)
			csr := old.DeepCopy()
			csr.Spec.SignerName = "example.com/other"
			tt.change(t, csr)
			registrytest.ExpectWant(t, registrytest.UpdateSubresource(t, Resource(), "approval", csr, old), tt.want...)
			if !reflect.DeepEqual(csr.Spec, old.Spec) || !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
				t.Errorf("spec or certificate changed: %+v", csr)
			}
		})
	}
}

func TestStampConditions(t *testing.T) {
	now, before := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(100, 0))
	old := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conditions{
		{Type: "Ready", Status: corev1.ConditionTrue, LastTransitionTime: before, LastUpdateTime: before},
	}}}
	tests := []struct {
		name           string
		written        certificatesv1.CertificateSigningRequestCondition
		update, change metav1.Time
	}{
		{"new type", certificatesv1.CertificateSigningRequestCondition{Type: "Other", Status: corev1.ConditionTrue}, now, now},
		{"same type and status", certificatesv1.CertificateSigningRequestCondition{Type: "Ready", Status: corev1.ConditionTrue}, now, before},
		{"status changed", certificatesv1.CertificateSigningRequestCondition{Type: "Ready", Status: corev1.ConditionFalse}, now, now},
		{"times given", certificatesv1.CertificateSigningRequestCondition{Type: "Other", Status: corev1.ConditionTrue, LastUpdateTime: before, LastTransitionTime: before}, before, before},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conditions{tt.written}}}
			stampConditions(csr, old, now)
			c := csr.Status.Conditions[0]
			if !c.LastUpdateTime.Equal(&tt.update) || !c.LastTransitionTime.Equal(&tt.change) {
				t.Errorf("update %v, transition %v; want %v, %v", c.LastUpdateTime, c.LastTransitionTime, tt.update, tt.change)
			}
		})
	}
}
