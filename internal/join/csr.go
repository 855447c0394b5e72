package join

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	csrclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/utils/clock"

	"orch/internal/pki"
)

// csrWait bounds the wait for a CertificateSigningRequest to be issued.
const csrWait = 5 * time.Minute

// csrRewatchPause is the pause before watching a request again after the
// server ended the watch.
const csrRewatchPause = time.Second

// nodeCSRs is the CertificateSigningRequests API as the node (its
// current client certificate), straight to the servers.
func (r *Renewer) nodeCSRs() (csrclient.CertificateSigningRequestInterface, error) {
	client, err := kubernetes.NewForConfig(r.creds.nodeRESTConfig())
	if err != nil {
		return nil, fmt.Errorf("orch agent: client for the server: %w", err)
	}
	return client.CertificatesV1().CertificateSigningRequests(), nil
}

// renewClientByCSR renews the node's client certificate alone through the
// CertificateSigningRequest API, as upstream's kubelet rotates it: with a
// new key it asks, as the node (its current, still valid, client
// certificate), signer kubernetes.io/kube-apiserver-client-kubelet for
// CN=system:node:NAME, O=system:nodes, waits at most csrWait for the
// certificate (the server's certificates controller approves a node's
// request for itself when system:nodes may create
// certificatesigningrequests/selfnodeclient, and signs it with the cluster
// CA), checks it, stores it, rewrites the kubeconfig and makes it current.
// It returns the request's name.
func (r *Renewer) renewClientByCSR(ctx context.Context) (string, error) {
	key, err := newKeyPair()
	if err != nil {
		return "", err
	}
	request, err := pki.NewCSR(key.signer, NodeUser(r.cfg.NodeName), []string{NodesGroup}, nil, nil)
	if err != nil {
		return "", err
	}
	name, err := csrName(key.signer)
	if err != nil {
		return "", err
	}
	csrs, err := r.csrs()
	if err != nil {
		return name, err
	}
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: clientUsages(key.signer),
			// No ExpirationSeconds: the signer's default.
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return name, fmt.Errorf("orch agent: create the CertificateSigningRequest %q for the node's client certificate: %w", name, err)
	}
	certPEM, err := waitForCertificate(ctx, r.cfg.Clock, csrs, created)
	if err != nil {
		return name, err
	}
	cert, err := checkClient(r.cfg, r.creds.CAPEM, certPEM, key)
	if err != nil {
		return name, fmt.Errorf("orch agent: the certificate issued for the CertificateSigningRequest %q does not fit: %w", name, err)
	}
	return name, r.install(r.creds.withClient(cert, certPEM, key))
}

// clientUsages are the usages of a node client certificate for key, as
// upstream's kubelet asks them: key encipherment only for an RSA key.
func clientUsages(key crypto.Signer) []certificatesv1.KeyUsage {
	if _, ok := key.(*rsa.PrivateKey); ok {
		return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	}
	return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
}

// csrName is node-csr- and a digest of key's public half: a new key, a
// new name.
func csrName(key crypto.Signer) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "node-csr-" + hex.EncodeToString(sum[:16]), nil
}

// waitForCertificate watches the request created until it has a
// certificate (returned, PEM), is denied or failed, or csrWait passes on
// clk. A watch the server ends is started again.
func waitForCertificate(ctx context.Context, clk clock.WithTicker, csrs csrclient.CertificateSigningRequestInterface, created *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	deadline := clk.NewTimer(csrWait)
	defer deadline.Stop()
	name, rv := created.Name, created.ResourceVersion
	timeout := func() error {
		return fmt.Errorf("orch agent: the CertificateSigningRequest %q for the node's client certificate was not issued within %s: "+
			"check that the server runs its certificates controller and that the group system:nodes may create certificatesigningrequests/selfnodeclient "+
			"(the ClusterRoleBinding system:orch:node-client-certificate-renewal)", name, csrWait)
	}
	for {
		w, err := csrs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
		if err != nil {
			return nil, fmt.Errorf("orch agent: watch the CertificateSigningRequest %q: %w", name, err)
		}
		// What happened before the watch began.
		current, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("orch agent: read the CertificateSigningRequest %q: %w", name, err)
		}
		certPEM, done, err := csrOutcome(current)
		if !done {
			certPEM, done, err = follow(ctx, w, deadline, name, &rv, timeout)
		}
		w.Stop()
		if done {
			return certPEM, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C():
			return nil, timeout()
		case <-clk.After(csrRewatchPause):
		}
	}
}

// follow reads w's events about the request name until it is done (see
// csrOutcome), ctx ends, deadline fires (timeout's error) or the watch
// ends (not done); rv follows the events.
func follow(ctx context.Context, w watch.Interface, deadline clock.Timer, name string, rv *string, timeout func() error) (certPEM []byte, done bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case <-deadline.C():
			return nil, true, timeout()
		case ev, open := <-w.ResultChan():
			if !open {
				return nil, false, nil
			}
			if ev.Type == watch.Error {
				*rv = "" // e.g. too old: the next watch starts from now
				return nil, false, nil
			}
			csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok || csr.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, true, fmt.Errorf("orch agent: the CertificateSigningRequest %q for the node's client certificate was deleted before it was issued", name)
			}
			*rv = csr.ResourceVersion
			if certPEM, done, err := csrOutcome(csr); done {
				return certPEM, done, err
			}
		}
	}
}

// csrOutcome is a request's certificate once it has one (done), or its
// Denied or Failed condition as an error (done).
func csrOutcome(csr *certificatesv1.CertificateSigningRequest) (certPEM []byte, done bool, err error) {
	for _, c := range csr.Status.Conditions {
		if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status != corev1.ConditionFalse {
			return nil, true, fmt.Errorf("orch agent: %w: the CertificateSigningRequest %q for the node's client certificate was %s: reason %q, message %q",
				ErrCSRRefused, csr.Name, strings.ToLower(string(c.Type)), c.Reason, c.Message)
		}
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}
