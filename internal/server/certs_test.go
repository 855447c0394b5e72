package server

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"orch/internal/pki"
)

func newTestRenewer(t *testing.T, now *time.Time) *certRenewer {
	t.Helper()
	dir := t.TempDir()
	p, err := Config{DataDir: dir, WriteKubeconfig: filepath.Join(dir, "admin.yaml"), WriteKubeconfigMode: 0o600, HTTPSPort: 6443,
		ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		AdvertiseAddress: "10.0.0.1"}.parse()
	if err != nil {
		t.Fatal(err)
	}
	return &certRenewer{p: p, url: "https://127.0.0.1:6443", now: func() time.Time { return *now }, log: slog.Default()}
}

func servingSerial(t *testing.T, r *certRenewer) string {
	t.Helper()
	cert, err := r.getCertificate(nil)
	if err != nil || cert == nil || cert.Leaf == nil {
		t.Fatalf("getCertificate = %v, %v", cert, err)
	}
	return cert.Leaf.SerialNumber.String()
}

func TestCertificatesRenewWhileRunning(t *testing.T) {
	now := time.Now()
	r := newTestRenewer(t, &now)
	if _, err := r.ensureCertificates(); err != nil {
		t.Fatal(err)
	}
	first := servingSerial(t, r)
	kubeconfig, _ := os.ReadFile(r.p.WriteKubeconfig)

	if _, err := r.ensureCertificates(); err != nil {
		t.Fatal(err)
	}
	if servingSerial(t, r) != first {
		t.Fatal("a fresh serving certificate was replaced")
	}

	now = now.Add(pki.LeafValidity - pki.RenewBefore + 24*time.Hour) // inside the renewal window
	if _, err := r.ensureCertificates(); err != nil {
		t.Fatal(err)
	}
	if servingSerial(t, r) == first {
		t.Fatal("a serving certificate due for renewal was kept")
	}
	renewed, _ := os.ReadFile(r.p.WriteKubeconfig)
	if bytes.Equal(kubeconfig, renewed) {
		t.Fatal("the admin kubeconfig still holds the old admin certificate")
	}
}

func TestCertificateRotateRequest(t *testing.T) {
	now := time.Now()
	r := newTestRenewer(t, &now)
	if _, err := r.ensureCertificates(); err != nil {
		t.Fatal(err)
	}
	first := servingSerial(t, r)
	request := filepath.Join(r.p.tlsDir(), RotateRequestFile)
	if err := os.WriteFile(request, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ensureCertificates(); err != nil {
		t.Fatal(err)
	}
	if servingSerial(t, r) == first {
		t.Fatal("a rotate request left the serving certificate as it was")
	}
	if _, err := os.Stat(request); !os.IsNotExist(err) {
		t.Fatalf("the rotate request is still there: %v", err)
	}
}

func TestCertificateExpiryWarning(t *testing.T) {
	now := time.Now()
	r := newTestRenewer(t, &now)
	bundle, err := r.ensureCertificates()
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	r.client = client
	r.warnExpiring(context.Background(), bundle)
	if events, _ := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{}); len(events.Items) != 0 {
		t.Fatalf("fresh certificates raised %d events", len(events.Items))
	}
	now = bundle.CA.NotAfter.Add(-10 * 24 * time.Hour)
	r.warnExpiring(context.Background(), bundle)
	events, _ := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	found := false
	for _, e := range events.Items {
		if e.Reason == "CertificateExpiring" && e.Type == "Warning" && bytes.Contains([]byte(e.Message), []byte("cluster CA")) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no Warning CertificateExpiring event for a CA 10 days from expiry: %+v", events.Items)
	}
}
