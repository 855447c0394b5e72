package podcertificaterequests

import (
	"crypto/elliptic"
	"encoding/pem"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

func pemCert(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func condition(t string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "E2E", Message: "Issued by E2E test", LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))}
}

func TestValidateStatusUpdate(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	notBefore := now.Add(-time.Minute)
	key := ecKey(t, elliptic.P256())
	pending := request(t, key)

	// issued is the status the conformance test writes: a one-hour
	// certificate for the request's key, refreshed after 15 minutes.
	issued := func(chain string, notBefore, notAfter, refresh time.Time) certificatesv1.PodCertificateRequestStatus {
		return certificatesv1.PodCertificateRequestStatus{
			Conditions:       []metav1.Condition{condition(certificatesv1.PodCertificateRequestConditionTypeIssued)},
			CertificateChain: chain, NotBefore: ptrTime(notBefore), NotAfter: ptrTime(notAfter), BeginRefreshAt: ptrTime(refresh),
		}
	}
	good := certificate(t, &key.PublicKey, notBefore, time.Hour)
	goodStatus := issued(good, notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute))
	denied := certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{condition(certificatesv1.PodCertificateRequestConditionTypeDenied)}}

	tests := []struct {
		name        string
		old, status certificatesv1.PodCertificateRequestStatus
		want        []want
	}{
		{"issue", certificatesv1.PodCertificateRequestStatus{}, goodStatus, nil},
		{"issue with an intermediate", certificatesv1.PodCertificateRequestStatus{},
			issued(good+certificate(t, &ecKey(t, elliptic.P256()).PublicKey, notBefore, time.Hour), notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)), nil},
		{"deny", certificatesv1.PodCertificateRequestStatus{}, denied, nil},
		{"nothing changes while pending", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{}, nil},
		{"a chain while pending", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{CertificateChain: good},
			[]want{{"FieldValueInvalid status", `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`}}},
		{"a chain with a denial", certificatesv1.PodCertificateRequestStatus{},
			certificatesv1.PodCertificateRequestStatus{Conditions: denied.Conditions, CertificateChain: good},
			[]want{{"FieldValueInvalid status", "non-condition status fields must be empty when denying or failing"}}},
		{"final", denied, goodStatus, []want{{"FieldValueInvalid status", "immutable after PodCertificateRequest is issued, denied, or failed"}}},
		{"final unchanged", goodStatus, goodStatus, nil},
		{"two final conditions", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
			condition(certificatesv1.PodCertificateRequestConditionTypeDenied), condition(certificatesv1.PodCertificateRequestConditionTypeFailed)}},
			[]want{{"FieldValueInvalid status.conditions[1].type", "at most one condition"}}},
		{"false", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
			{Type: "Failed", Status: metav1.ConditionFalse, Reason: "E2E", LastTransitionTime: metav1.NewTime(now)}}},
			[]want{{"FieldValueNotSupported status.conditions[0].status", `"True"`}}},
		{"another type", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{condition("Ready")}},
			[]want{{"FieldValueNotSupported status.conditions[0].type", `"Issued", "Denied", "Failed"`}}},
		{"no reason or time", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{Conditions: []metav1.Condition{
			{Type: "Denied", Status: metav1.ConditionTrue}}},
			[]want{{"FieldValueRequired status.conditions[0].lastTransitionTime", ""}, {"FieldValueRequired status.conditions[0].reason", ""}}},
		{"no chain", certificatesv1.PodCertificateRequestStatus{}, issued("", notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "must contain at least one certificate"}}},
		{"not X.509", certificatesv1.PodCertificateRequestStatus{}, issued(pemCert([]byte("junk")), notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "leaf certificate does not parse as valid X.509"}}},
		{"another key", certificatesv1.PodCertificateRequestStatus{},
			issued(certificate(t, &ecKey(t, elliptic.P256()).PublicKey, notBefore, time.Hour), notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "not issued to the requested public key"}}},
		{"bad DNS names", certificatesv1.PodCertificateRequestStatus{},
			issued(certificate(t, &key.PublicKey, notBefore, time.Hour, "a..b", ".c"), notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "should not contain '..'"}, {"FieldValueInvalid status.certificateChain", "should not start or end with '.'"}}},
		{"no times", certificatesv1.PodCertificateRequestStatus{}, certificatesv1.PodCertificateRequestStatus{Conditions: goodStatus.Conditions, CertificateChain: good},
			[]want{{"FieldValueRequired status.notBefore", ""}, {"FieldValueRequired status.notAfter", ""}, {"FieldValueRequired status.beginRefreshAt", ""}}},
		{"notBefore not the certificate's", certificatesv1.PodCertificateRequestStatus{}, issued(good, notBefore.Add(time.Second), notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.notBefore", "NotBefore time encoded in the leaf certificate"}}},
		{"notBefore too old", certificatesv1.PodCertificateRequestStatus{},
			issued(certificate(t, &key.PublicKey, now.Add(-5*time.Minute), time.Hour), now.Add(-5*time.Minute), now.Add(55*time.Minute), now),
			[]want{{"FieldValueInvalid status.notBefore", "within 5 minutes"}}},
		{"notAfter not the certificate's", certificatesv1.PodCertificateRequestStatus{}, issued(good, notBefore, notBefore.Add(2*time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.notAfter", "NotAfter time encoded in the leaf certificate"}}},
		{"under an hour", certificatesv1.PodCertificateRequestStatus{},
			issued(certificate(t, &key.PublicKey, notBefore, 59*time.Minute), notBefore, notBefore.Add(59*time.Minute), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "lifetime must be >= 1 hour"}}},
		{"over maxExpirationSeconds", certificatesv1.PodCertificateRequestStatus{},
			issued(certificate(t, &key.PublicKey, notBefore, 25*time.Hour), notBefore, notBefore.Add(25*time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "lifetime must be <= spec.maxExpirationSeconds (86400)"}}},
		{"refresh too soon", certificatesv1.PodCertificateRequestStatus{}, issued(good, notBefore, notBefore.Add(time.Hour), notBefore.Add(9*time.Minute)),
			[]want{{"FieldValueInvalid status.beginRefreshAt", "at least 10 minutes after status.notBefore"}}},
		{"refresh too late", certificatesv1.PodCertificateRequestStatus{}, issued(good, notBefore, notBefore.Add(time.Hour), notBefore.Add(51*time.Minute)),
			[]want{{"FieldValueInvalid status.beginRefreshAt", "at least 10 minutes before status.notAfter"}}},
		{"a key in the chain", certificatesv1.PodCertificateRequestStatus{},
			issued(good+string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")})), notBefore, notBefore.Add(time.Hour), notBefore.Add(15*time.Minute)),
			[]want{{"FieldValueInvalid status.certificateChain", "must consist entirely of CERTFICATE PEM blocks"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := pending.DeepCopy()
			old.Status = tt.old
			pcr := old.DeepCopy()
			pcr.Status = tt.status
			registrytest.ExpectWant(t, validateStatusUpdate(pcr, old, now), tt.want...)
		})
	}
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
