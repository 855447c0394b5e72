package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceAccountKey: Ensure creates an RSA 2048 key once (mode 0600),
// keeps it on later starts, accepts an ECDSA key put there by hand, and
// refuses a file it cannot use.
func TestServiceAccountKey(t *testing.T) {
	dir := t.TempDir()
	b := mustEnsure(t, testConfig(dir))
	path := filepath.Join(dir, ServiceAccountKeyFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %o, want 600", fi.Mode().Perm())
	}
	rsaKey, ok := b.ServiceAccountKey.(*rsa.PrivateKey)
	if !ok || rsaKey.N.BitLen() != 2048 {
		t.Fatalf("key = %T, want RSA 2048", b.ServiceAccountKey)
	}
	again := mustEnsure(t, testConfig(dir))
	if !rsaKey.Equal(again.ServiceAccountKey) || string(again.ServiceAccountKeyPEM) != string(b.ServiceAccountKeyPEM) {
		t.Error("the key changed on the second Ensure")
	}

	ec, _ := ecdsa.GenerateKey(elliptic.P256(), randReader)
	der, _ := x509.MarshalECPrivateKey(ec)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustEnsure(t, testConfig(dir)); !ec.Equal(got.ServiceAccountKey) {
		t.Error("an ECDSA key was not kept")
	}

	small, _ := rsa.GenerateKey(randReader, 1024)
	os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}), 0o600)
	if _, err := Ensure(testConfig(dir)); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("1024-bit key: err = %v, want too small", err)
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	if _, err := Ensure(testConfig(dir)); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Errorf("garbage key: err = %v, want unreadable", err)
	}
}
