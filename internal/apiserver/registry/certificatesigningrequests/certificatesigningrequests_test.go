package certificatesigningrequests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"reflect"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// pemRequest is a PEM certificate request for e2e.example.com, as
// cert.MakeCSR writes it.
func pemRequest(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "e2e.example.com"}, DNSNames: []string{"e2e.example.com"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// pemCertificate is a self-signed PEM certificate.
func pemCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e.example.com"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(0, 0).Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// request is what the e2e test creates: a one-hour server certificate
// from a custom signer.
func request(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-example-csr-x7k2p"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pemRequest(t),
			SignerName:        "example.com/e2e-certificates-1234",
			ExpirationSeconds: ptr.To(int32(3600)),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth},
		},
	}
}

func cond(t certificatesv1.RequestConditionType, status corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: status, Reason: "E2E"}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "certificates.k8s.io/v1" || r.Resource != "certificatesigningrequests" || r.Kind != "CertificateSigningRequest" ||
		r.SingularName != "certificatesigningrequest" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NamePathSegment {
		t.Errorf("names: %+v", r)
	}
	if !reflect.DeepEqual(r.ShortNames, []string{"csr"}) || r.Categories != nil {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.Subresources["approval"]; !ok {
		t.Error("no approval subresource")
	}
	if _, ok := r.Subresources["status"]; !ok {
		t.Error("no status subresource")
	}
	if _, ok := r.New().(*certificatesv1.CertificateSigningRequest); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*certificatesv1.CertificateSigningRequestList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
	if got := r.SelectableFields(request(t))["spec.signerName"]; got != "example.com/e2e-certificates-1234" {
		t.Errorf("spec.signerName field = %q", got)
	}
}

// TestCreate: the requestor is the user who creates the request, whatever
// the client sent, and a new request has no status and no generation.
func TestCreate(t *testing.T) {
	tests := []struct {
		name string
		user authz.User
		want certificatesv1.CertificateSigningRequestSpec
	}{
		{"a user", authz.User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}},
			certificatesv1.CertificateSigningRequestSpec{Username: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"},
				Extra: map[string]certificatesv1.ExtraValue{"scopes": {"a", "b"}}}},
		{"no extra", authz.User{Name: "system:node:n1", Groups: []string{"system:nodes"}},
			certificatesv1.CertificateSigningRequestSpec{Username: "system:node:n1", Groups: []string{"system:nodes"}}},
		{"no user", authz.User{}, certificatesv1.CertificateSigningRequestSpec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := request(t)
			csr.Generation = 1
			csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = "mallory", "u-9", []string{"system:masters"}
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"x": {"y"}}
			csr.Status = certificatesv1.CertificateSigningRequestStatus{
				Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}, Certificate: pemCertificate(t)}
			registrytest.ExpectErrors(t, registrytest.CreateAs(Resource(), csr, tt.user))
			got := certificatesv1.CertificateSigningRequestSpec{Username: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: csr.Spec.Extra}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("requestor = %+v, want %+v", got, tt.want)
			}
			if len(csr.Status.Conditions) != 0 || csr.Status.Certificate != nil || csr.Generation != 0 {
				t.Errorf("status %+v, generation %d: want none", csr.Status, csr.Generation)
			}
		})
	}
}

// TestUpdate: the main resource changes metadata only; a changed spec is
// dropped, as upstream's.
func TestUpdate(t *testing.T) {
	old := request(t)
	csr := old.DeepCopy()
	csr.Annotations = map[string]string{"updated": "true"}
	csr.Spec.SignerName = "example.com/other"
	csr.Spec.Usages = nil
	registrytest.ExpectErrors(t, registrytest.Update(Resource(), csr, old))
	if !reflect.DeepEqual(csr.Spec, old.Spec) {
		t.Errorf("spec = %+v, want the stored one", csr.Spec)
	}
	if csr.Annotations["updated"] != "true" {
		t.Errorf("annotations = %v", csr.Annotations)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	denied := cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)
	failed := cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)
	tests := []struct {
		name       string
		signer     string
		seconds    *int32
		conditions []certificatesv1.CertificateSigningRequestCondition
		cert       bool
		want       []interface{}
	}{
		{"pending", "example.com/s", ptr.To(int32(3600)), nil, false, []interface{}{"req", "5m", "example.com/s", "alice", "60m", "Pending"}},
		{"approved and issued", "example.com/s", nil, []certificatesv1.CertificateSigningRequestCondition{approved}, true,
			[]interface{}{"req", "5m", "example.com/s", "alice", "<none>", "Approved,Issued"}},
		{"denied wins", "", ptr.To(int32(86400)), []certificatesv1.CertificateSigningRequestCondition{approved, denied}, false,
			[]interface{}{"req", "5m", "<none>", "alice", "24h", "Denied"}},
		{"failed", "example.com/s", nil, []certificatesv1.CertificateSigningRequestCondition{approved, failed}, false,
			[]interface{}{"req", "5m", "example.com/s", "alice", "<none>", "Approved,Failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "req", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute))},
				Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: tt.signer, ExpirationSeconds: tt.seconds, Username: "alice"},
				Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: tt.conditions},
			}
			if tt.cert {
				csr.Status.Certificate = []byte("PEM")
			}
			r := Resource()
			row := r.Row(csr, now)
			registrytest.CheckTable(t, r, row)
			if !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %v, want %v", row, tt.want)
			}
		})
	}
	var names []string
	for _, c := range Resource().Columns {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
}
