package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/pki"
)

// RotateRequestFile, in data-dir/server/tls, asks the server to issue new
// leaf certificates now (`orch certificate rotate` writes it).
const RotateRequestFile = "rotate"

// expiryWarning is how close to expiry a certificate raises a warning.
const expiryWarning = 30 * 24 * time.Hour

// certRenewer keeps the server's leaf certificates (apiserver serving,
// admin, etcd server, peer and client) fresh while the server runs: every check re-runs the PKI's
// Ensure, which replaces those that expire within pki.RenewBefore, and
// the apiserver serves the new certificate from the next handshake on
// (etcd reads its files at each handshake). A rotate request replaces
// them all. A certificate (the CA above all, which orch never replaces
// by itself) expiring within 30 days is logged and raises a Warning event.
type certRenewer struct {
	p       parsed
	url     string // the admin kubeconfig's server
	now     func() time.Time
	serving atomic.Pointer[tls.Certificate]
	// admin is the admin certificate last written to the kubeconfig.
	admin  []byte
	client kubernetes.Interface // for events; nil until Start
	log    *slog.Logger
}

// certCheckEvery is how often certificates are checked; rotate requests
// are looked for every rotateCheckEvery.
const (
	certCheckEvery   = time.Hour
	rotateCheckEvery = 10 * time.Second
)

// ensureCertificates issues what is due (everything when a rotate was
// requested) and returns the bundle.
func (r *certRenewer) ensureCertificates() (*pki.Bundle, error) {
	rotate := filepath.Join(r.p.tlsDir(), RotateRequestFile)
	_, err := os.Stat(rotate)
	forced := err == nil
	if forced {
		if err := r.removeLeaves(); err != nil {
			return nil, err
		}
	}
	bundle, err := pki.Ensure(pki.Config{Dir: r.p.tlsDir(), NodeIPs: r.p.nodeIPs, ExtraSANs: append(r.p.TLSSANs, r.p.advertise.String()),
		ServiceCIDR: r.p.serviceCIDR, ClusterDomain: r.p.ClusterDomain, Now: r.now})
	if err != nil {
		return nil, err
	}
	if _, err := pki.EnsureEtcd(r.p.etcdTLSDir(), r.p.etcdIPs()); err != nil {
		return nil, err
	}
	// The apiserver loads the front proxy's certificate when it starts.
	if _, err := pki.EnsureFrontProxy(r.p.frontProxyTLSDir()); err != nil {
		return nil, err
	}
	cert, err := bundle.ServingCertificate()
	if err != nil {
		return nil, err
	}
	if old := r.serving.Swap(&cert); old != nil && old.Leaf != nil && !old.Leaf.Equal(bundle.Serving) {
		r.log.Info("serving new certificates", "expires", bundle.Serving.NotAfter.UTC().Format(time.RFC3339), "rotated", forced)
	}
	if !bytes.Equal(r.admin, bundle.AdminCertPEM) {
		if err := pki.WriteKubeconfig(r.p.WriteKubeconfig, r.p.WriteKubeconfigMode, r.url, bundle.CACertPEM, bundle.AdminCertPEM, bundle.AdminKeyPEM); err != nil {
			return nil, err
		}
		r.admin = bundle.AdminCertPEM
	}
	if forced {
		os.Remove(rotate)
	}
	return bundle, nil
}

// removeLeaves deletes the leaf certificates so that Ensure issues new ones.
func (r *certRenewer) removeLeaves() error {
	names := []string{pki.ServingCertFile, pki.ServingKeyFile, pki.AdminCertFile, pki.AdminKeyFile}
	for _, n := range []string{pki.EtcdServerCertFile, pki.EtcdServerKeyFile, pki.EtcdPeerCertFile, pki.EtcdPeerKeyFile, pki.EtcdClientCertFile, pki.EtcdClientKeyFile} {
		names = append(names, filepath.Join("etcd", n))
	}
	for _, n := range names {
		if err := os.Remove(filepath.Join(r.p.tlsDir(), n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate certificates: %w", err)
		}
	}
	r.log.Info("rotating the server's certificates as asked")
	return nil
}

// getCertificate serves the current serving certificate.
func (r *certRenewer) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.serving.Load(), nil
}

func (r *certRenewer) Start(ctx context.Context) error {
	lastCheck := r.now()
	rotate := filepath.Join(r.p.tlsDir(), RotateRequestFile)
	ticker := time.NewTicker(rotateCheckEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if _, err := os.Stat(rotate); err != nil && r.now().Sub(lastCheck) < certCheckEvery {
			continue
		}
		lastCheck = r.now()
		bundle, err := r.ensureCertificates()
		if err != nil {
			r.log.Error("cannot renew the server's certificates; retrying", "err", err)
			continue
		}
		r.warnExpiring(ctx, bundle)
	}
}

// warnExpiring logs and records an event for each certificate that
// expires within expiryWarning.
func (r *certRenewer) warnExpiring(ctx context.Context, bundle *pki.Bundle) {
	for _, c := range []struct {
		name string
		cert *x509.Certificate
	}{{"cluster CA " + bundle.Path(pki.CACertFile), bundle.CA}, {"apiserver serving certificate", bundle.Serving}, {"admin certificate", bundle.Admin}} {
		left := c.cert.NotAfter.Sub(r.now())
		if left >= expiryWarning {
			continue
		}
		msg := fmt.Sprintf("the %s expires on %s (in %d days)", c.name, c.cert.NotAfter.UTC().Format("2006-01-02"), int(left.Hours()/24))
		r.log.Warn(msg)
		if r.client == nil {
			continue
		}
		node := r.p.nodeName()
		event := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: node + ".", Namespace: metav1.NamespaceDefault},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, APIVersion: "v1"},
			Reason:         "CertificateExpiring", Message: msg, Type: corev1.EventTypeWarning,
			Source:         corev1.EventSource{Component: "orch-server", Host: node},
			FirstTimestamp: metav1.NewTime(r.now()), LastTimestamp: metav1.NewTime(r.now()), Count: 1,
		}
		if _, err := r.client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, event, metav1.CreateOptions{}); err != nil {
			r.log.Warn("cannot record the certificate expiry event", "err", err)
		}
	}
}
