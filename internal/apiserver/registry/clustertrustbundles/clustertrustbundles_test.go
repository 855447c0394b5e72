package clustertrustbundles

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// certPEM is a self-signed certificate, a CA one when ca, as the e2e
// test's mustMakeCAPEM makes.
func certPEM(t *testing.T, cn string, ca bool) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(0), Subject: pkix.Name{CommonName: cn}, IsCA: ca, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func bundle(name, signer, trust string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: trust}}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "certificates.k8s.io/v1" || r.Resource != "clustertrustbundles" || r.Kind != "ClusterTrustBundle" ||
		r.SingularName != "clustertrustbundle" || r.Namespaced || r.HasStatus || r.NameValidation != registry.NamePathSegment {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || r.Categories != nil {
		t.Errorf("short names %v, categories %v; upstream has none", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*certificatesv1.ClusterTrustBundle); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*certificatesv1.ClusterTrustBundleList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
	if got := r.SelectableFields(bundle("a", "example.com/s", ""))["spec.signerName"]; got != "example.com/s" {
		t.Errorf("spec.signerName field = %q", got)
	}
}

func TestValidateCreate(t *testing.T) {
	ca, other := certPEM(t, "root", true), certPEM(t, "other", true)
	leaf := certPEM(t, "leaf", false)
	headers := strings.Replace(ca, "-----BEGIN CERTIFICATE-----\n", "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n", 1)
	tests := []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want []want
	}{
		{"no signer", bundle("test-certificates-1234", "", ca), nil},
		{"a signer", bundle("test.test:signer-one:4", "test.test/signer-one", ca+other), nil},
		{"colon without signer", bundle("test.test:signer-one:4", "", ca),
			[]want{{"FieldValueInvalid metadata.name", `without signer name must not have ":"`}}},
		{"not a subdomain", bundle("Root", "", ca), []want{{"FieldValueInvalid metadata.name", "RFC 1123"}}},
		{"not named after the signer", bundle("root", "test.test/signer-one", ca),
			[]want{{"FieldValueInvalid metadata.name", "must be named with prefix test.test:signer-one:"}}},
		{"named after the signer, then bad", bundle("test.test:signer-one:Root", "test.test/signer-one", ca),
			[]want{{"FieldValueInvalid metadata.name", "RFC 1123"}}},
		{"bad signer", bundle("test:signer:root", "test/signer", ca),
			[]want{{"FieldValueInvalid spec.signerName", "at least two segments"}}},
		{"empty bundle", bundle("root", "", ""), []want{{"FieldValueInvalid spec.trustBundle", "at least one trust anchor must be provided"}}},
		{"not PEM", bundle("root", "", "junk"), []want{{"FieldValueInvalid spec.trustBundle", "at least one trust anchor must be provided"}}},
		{"a leaf", bundle("root", "", ca+leaf), []want{{"FieldValueInvalid spec.trustBundle", "entry 1 does not have the CA bit set"}}},
		{"a key", bundle("root", "", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")}))),
			[]want{{"FieldValueInvalid spec.trustBundle", "entry 0 has bad block type: PRIVATE KEY"}}},
		{"headers", bundle("root", "", headers), []want{{"FieldValueInvalid spec.trustBundle", "entry 0 has PEM block headers"}}},
		{"not X.509", bundle("root", "", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}))),
			[]want{{"FieldValueInvalid spec.trustBundle", "entry 0 does not parse as X.509"}}},
		{"twice", bundle("root", "", ca+other+ca), []want{{"FieldValueInvalid spec.trustBundle", "duplicate trust anchor (indices [0 2])"}}},
		{"too big", bundle("root", "", strings.Repeat(" ", maxTrustBundleSize+1)), []want{{"FieldValueTooLong spec.trustBundle", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, registrytest.Create(Resource(), tt.b), tt.want...)
		})
	}

	gen := bundle("", "test.test/signer-one", ca)
	gen.GenerateName = "wrong-"
	registrytest.ExpectWant(t, registrytest.Create(Resource(), gen),
		want{"FieldValueInvalid metadata.generateName", "must be named with prefix test.test:signer-one:"})
}

func TestValidateUpdate(t *testing.T) {
	ca, other := certPEM(t, "root", true), certPEM(t, "other", true)
	tests := []struct {
		name      string
		old, next *certificatesv1.ClusterTrustBundle
		want      []want
	}{
		{"new bundle", bundle("root", "", ca), bundle("root", "", other), nil},
		{"a bad new bundle", bundle("root", "", ca), bundle("root", "", ca+ca), []want{{"FieldValueInvalid spec.trustBundle", "duplicate"}}},
		{"a stored bad bundle is not parsed again", bundle("root", "", ca+ca), bundle("root", "", ca+ca), nil},
		{"signer set", bundle("a:b:root", "", ca), bundle("a:b:root", "a/b", ca), []want{
			{"FieldValueInvalid spec.signerName", "at least two segments"}, {"FieldValueInvalid spec.signerName", "field is immutable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, registrytest.Update(Resource(), tt.next, tt.old), tt.want...)
		})
	}
}

func TestTable(t *testing.T) {
	r := Resource()
	for _, tt := range []struct {
		b    *certificatesv1.ClusterTrustBundle
		want []interface{}
	}{
		{bundle("root", "", ""), []interface{}{"root", "<none>"}},
		{bundle("example.com:s:root", "example.com/s", ""), []interface{}{"example.com:s:root", "example.com/s"}},
	} {
		row := r.Row(tt.b, time.Now())
		registrytest.CheckTable(t, r, row)
		if !reflect.DeepEqual(row, tt.want) {
			t.Errorf("row = %v, want %v", row, tt.want)
		}
	}
}
