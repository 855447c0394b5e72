package podcertificaterequests

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// stubRequest is an empty PKCS#10 request signed by key, as the kubelet
// (and the e2e test) makes.
func stubRequest(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func ecKey(t *testing.T, curve elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// request is what the PodCertificateRequest API conformance test creates,
// for key.
func request(t *testing.T, key crypto.Signer) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "podcertificaterequest-1234"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:           "example.com/e2e-podcertificaterequest-1234",
			PodName:              "test-pod",
			PodUID:               "12345678-1234-1234-1234-123456789012",
			ServiceAccountName:   "default",
			ServiceAccountUID:    "12345678-1234-1234-1234-123456789013",
			NodeName:             "test-node",
			NodeUID:              "12345678-1234-1234-1234-123456789014",
			MaxExpirationSeconds: ptr.To(int32(86400)),
			StubPKCS10Request:    stubRequest(t, key),
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "certificates.k8s.io/v1" || r.Resource != "podcertificaterequests" || r.Kind != "PodCertificateRequest" ||
		r.SingularName != "podcertificaterequest" || !r.Namespaced || !r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || r.Categories != nil {
		t.Errorf("short names %v, categories %v; upstream has none", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*certificatesv1.PodCertificateRequest); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*certificatesv1.PodCertificateRequestList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
	got := r.SelectableFields(request(t, ecKey(t, elliptic.P256())))
	if got["spec.signerName"] != "example.com/e2e-podcertificaterequest-1234" || got["spec.podName"] != "test-pod" || got["spec.nodeName"] != "test-node" {
		t.Errorf("fields = %v", got)
	}
}

// TestCreate: the lifetime defaults to a day, and a new request has no
// status and no generation.
func TestCreate(t *testing.T) {
	pcr := request(t, ecKey(t, elliptic.P256()))
	pcr.Spec.MaxExpirationSeconds = nil
	pcr.Generation = 1
	pcr.Status.CertificateChain = "chain"
	registrytest.ExpectErrors(t, registrytest.Create(Resource(), pcr))
	if pcr.Spec.MaxExpirationSeconds == nil || *pcr.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("maxExpirationSeconds = %v, want 86400", pcr.Spec.MaxExpirationSeconds)
	}
	if !reflect.DeepEqual(pcr.Status, certificatesv1.PodCertificateRequestStatus{}) || pcr.Generation != 0 {
		t.Errorf("status %+v, generation %d: want none", pcr.Status, pcr.Generation)
	}
}

func TestValidateCreate(t *testing.T) {
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	type spec = certificatesv1.PodCertificateRequestSpec
	tests := []struct {
		name   string
		change func(s *spec)
		want   []want
	}{
		{"valid", func(*spec) {}, nil},
		{"ed25519", func(s *spec) { s.StubPKCS10Request = stubRequest(t, edKey) }, nil},
		{"P-521", func(s *spec) { s.StubPKCS10Request = stubRequest(t, ecKey(t, elliptic.P521())) }, nil},
		{"P-224", func(s *spec) { s.StubPKCS10Request = stubRequest(t, ecKey(t, elliptic.P224())) },
			[]want{{"FieldValueInvalid spec.stubPKCS10Request", "must use curve P256, P384, or P521"}}},
		{"no stub", func(s *spec) { s.StubPKCS10Request = nil },
			[]want{{"FieldValueInvalid spec", "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"}}},
		{"not a request", func(s *spec) { s.StubPKCS10Request = []byte("junk") },
			[]want{{"FieldValueInvalid spec.stubPKCS10Request", "must be a valid PKCS#10 CSR"}}},
		{"stub too big", func(s *spec) { s.StubPKCS10Request = make([]byte, maxStubRequestSize+1) },
			[]want{{"FieldValueTooLong spec.stubPKCS10Request", ""}}},
		{"no signer", func(s *spec) { s.SignerName = "" }, []want{{"FieldValueRequired spec.signerName", ""}}},
		{"names and UIDs missing", func(s *spec) {
			s.PodName, s.PodUID, s.ServiceAccountName, s.ServiceAccountUID, s.NodeName, s.NodeUID = "", "", "", "", "", ""
		}, []want{
			{"FieldValueInvalid spec.podName", "RFC 1123"}, {"FieldValueInvalid spec.podUID", "must not be empty"},
			{"FieldValueInvalid spec.serviceAccountName", "RFC 1123"}, {"FieldValueInvalid spec.serviceAccountUID", "must not be empty"},
			{"FieldValueInvalid spec.nodeName", "RFC 1123"}, {"FieldValueInvalid spec.nodeUID", "must not be empty"},
		}},
		{"long UID", func(s *spec) { s.NodeUID = types.UID(strings.Repeat("x", 129)) }, []want{{"FieldValueTooLong spec.nodeUID", "128"}}},
		{"an hour", func(s *spec) { s.MaxExpirationSeconds = ptr.To(int32(3600)) }, nil},
		{"under an hour", func(s *spec) { s.MaxExpirationSeconds = ptr.To(int32(3599)) },
			[]want{{"FieldValueInvalid spec.maxExpirationSeconds", "must be in the range [3600, 7862400]"}}},
		{"91 days", func(s *spec) { s.MaxExpirationSeconds = ptr.To(int32(7862400)) }, nil},
		{"over 91 days", func(s *spec) { s.MaxExpirationSeconds = ptr.To(int32(7862401)) },
			[]want{{"FieldValueInvalid spec.maxExpirationSeconds", "must be in the range [3600, 7862400]"}}},
		{"a kubernetes.io signer: a day", func(s *spec) { s.SignerName = "kubernetes.io/kube-apiserver-client-pod" }, nil},
		{"a kubernetes.io signer: over a day", func(s *spec) {
			s.SignerName, s.MaxExpirationSeconds = "foo.kubernetes.io/signer", ptr.To(int32(86401))
		}, []want{{"FieldValueInvalid spec.maxExpirationSeconds", "must be in the range [3600, 86400]"}}},
		{"no lifetime", func(s *spec) { s.MaxExpirationSeconds = nil }, []want{{"FieldValueRequired spec.maxExpirationSeconds", "must be set"}}},
		{"user annotations", func(s *spec) { s.UnverifiedUserAnnotations = map[string]string{"Example.com/Team": "a"} }, nil},
		{"user annotation without a domain", func(s *spec) { s.UnverifiedUserAnnotations = map[string]string{"team": "a"} },
			[]want{{"FieldValueInvalid spec.unverifiedUserAnnotations", "must be a domain-prefixed key"}}},
		{"user annotations too big", func(s *spec) {
			s.UnverifiedUserAnnotations = map[string]string{"example.com/big": strings.Repeat("x", 256*1024)}
		}, []want{{"FieldValueTooLong spec.unverifiedUserAnnotations", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcr := request(t, ecKey(t, elliptic.P256()))
			tt.change(&pcr.Spec)
			registrytest.ExpectWant(t, validateCreate(pcr), tt.want...)
		})
	}
}

// TestUpdate: the spec never changes; labels may.
func TestUpdate(t *testing.T) {
	old := request(t, ecKey(t, elliptic.P256()))
	pcr := old.DeepCopy()
	pcr.Labels = map[string]string{"test.podcertificaterequest.example.com": "test"}
	registrytest.ExpectErrors(t, registrytest.Update(Resource(), pcr, old))
	pcr.Spec.PodName = "other"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), pcr, old), want{"FieldValueInvalid spec", "field is immutable"})
}

func TestTable(t *testing.T) {
	r := Resource()
	pcr := request(t, ecKey(t, elliptic.P256()))
	for _, tt := range []struct {
		name        string
		conditions  []metav1.Condition
		annotations map[string]string
		want        []interface{}
	}{
		{"pending", nil, nil, []interface{}{"test", "test-pod", "default", "test-node", "example.com/e2e-podcertificaterequest-1234", "Pending", "<none>"}},
		{"issued", []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue}}, map[string]string{"example.com/b": "2", "example.com/a": "1"},
			[]interface{}{"test", "test-pod", "default", "test-node", "example.com/e2e-podcertificaterequest-1234", "Issued", "example.com/a=1,example.com/b=2"}},
		{"denied", []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue}}, nil,
			[]interface{}{"test", "test-pod", "default", "test-node", "example.com/e2e-podcertificaterequest-1234", "Denied", "<none>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pcr.Status.Conditions, pcr.Spec.UnverifiedUserAnnotations = tt.conditions, tt.annotations
			row := r.Row(pcr, time.Now())
			registrytest.CheckTable(t, r, row)
			if !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %v, want %v", row, tt.want)
			}
		})
	}
}

// certificate is a certificate for pub valid from notBefore for lifetime,
// signed by a throwaway CA, in PEM.
func certificate(t *testing.T, pub crypto.PublicKey, notBefore time.Time, lifetime time.Duration, dnsNames ...string) string {
	t.Helper()
	ca := ecKey(t, elliptic.P256())
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime)}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "e2e.example.com"}, DNSNames: dnsNames,
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, pub, ca)
	if err != nil {
		t.Fatal(err)
	}
	return pemCert(der)
}
