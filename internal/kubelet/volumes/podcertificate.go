package volumes

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// errNotIssued is why a pod whose first certificate is not issued yet
// waits (upstream's words).
var errNotIssued = errors.New("credential bundle is not issued yet")

// podCertificate is one podCertificate projection of a pod, as upstream's
// issuing manager keeps it: the credentials in use (none until the first
// request is issued), the request waited for, or the denial or failure
// that ends it for good.
type podCertificate struct {
	key, chain []byte // PEM: PKCS#8 private key, certificate chain
	refreshAt  time.Time
	request    string // the PodCertificateRequest waited for, "" for none
	requestKey []byte // its private key
	final      error  // a request was denied or failed
}

// podCertificatePayload is a podCertificate projection (source i of the
// projected volume): a private key made here and the chain the signer
// issued for it through a PodCertificateRequest, in one credential
// bundle and/or two files. The pod waits until the first chain is
// issued; after the chain's beginRefreshAt a new request is made, and
// the old credentials stay in use until it is issued. A denied or failed
// request is final, as upstream's.
func (s *setup) podCertificatePayload(volume string, i int, src *corev1.PodCertificateProjection, mode int32) (map[string]fileProjection, error) {
	key := fmt.Sprintf("%s/%d", volume, i)
	pc := s.ps.certs[key]
	if pc == nil {
		pc = &podCertificate{}
		s.ps.certs[key] = pc
	}
	if pc.request != "" && pc.final == nil {
		if err := s.checkPodCertificateRequest(pc); err != nil && pc.chain == nil {
			return nil, err
		}
	}
	if pc.final != nil {
		return nil, pc.final
	}
	if pc.request == "" && (pc.chain == nil || !s.m.Clock.Now().Before(pc.refreshAt)) {
		err := s.requestPodCertificate(pc, src)
		switch {
		case err != nil && pc.chain == nil:
			return nil, err
		case err != nil:
			s.log.Warn("cannot request a new pod certificate, using the current one", "volume", volume, "err", err)
		}
	}
	if pc.chain == nil {
		return nil, errNotIssued
	}
	if fsGroup(s.pod) != nil {
		mode = 0o600
	}
	files := map[string]fileProjection{}
	if src.CredentialBundlePath != "" {
		files[src.CredentialBundlePath] = fileProjection{Data: append(append([]byte{}, pc.key...), pc.chain...), Mode: mode}
	}
	if src.KeyPath != "" {
		files[src.KeyPath] = fileProjection{Data: pc.key, Mode: mode}
	}
	if src.CertificateChainPath != "" {
		files[src.CertificateChainPath] = fileProjection{Data: pc.chain, Mode: mode}
	}
	return files, nil
}

// checkPodCertificateRequest moves pc on by its request's conditions: an
// issued chain becomes the one in use, a denial or failure is final, a
// request that is gone is made again. The error says why there is no
// chain yet.
func (s *setup) checkPodCertificateRequest(pc *podCertificate) error {
	pcr, err := s.m.client.CertificatesV1().PodCertificateRequests(s.pod.Namespace).Get(s.ctx, pc.request, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		name := pc.request
		pc.request, pc.requestKey = "", nil // deleted by someone: ask again
		return fmt.Errorf("PodCertificateRequest %s/%s appears to have been deleted", s.pod.Namespace, name)
	}
	if err != nil {
		return fmt.Errorf("while getting PodCertificateRequest %s/%s: %w", s.pod.Namespace, pc.request, err)
	}
	for _, c := range pcr.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			pc.final = fmt.Errorf("PodCertificateRequest was permanently denied: reason=%q message=%q", c.Reason, c.Message)
			return pc.final
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			pc.final = fmt.Errorf("PodCertificateRequest was permanently failed: reason=%q message=%q", c.Reason, c.Message)
			return pc.final
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			pc.key, pc.chain = pc.requestKey, cleanChain([]byte(pcr.Status.CertificateChain))
			pc.refreshAt = time.Time{}
			if pcr.Status.BeginRefreshAt != nil {
				pc.refreshAt = pcr.Status.BeginRefreshAt.Time
			}
			pc.request, pc.requestKey = "", nil
			return nil
		}
	}
	return errNotIssued
}

// requestPodCertificate makes a key of the projection's type and a
// PodCertificateRequest for it, owned by the pod, naming the pod, its
// service account and node with their UIDs; pc then waits for it.
func (s *setup) requestPodCertificate(pc *podCertificate, src *corev1.PodCertificateProjection) error {
	pod := s.pod
	sa, err := s.m.client.CoreV1().ServiceAccounts(pod.Namespace).Get(s.ctx, pod.Spec.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("while fetching service account: %w", err)
	}
	node, err := s.m.client.CoreV1().Nodes().Get(s.ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("while getting node %q: %w", pod.Spec.NodeName, err)
	}
	key, stub, err := newCertificateKey(src.KeyType)
	if err != nil {
		return fmt.Errorf("while generating keypair: %w", err)
	}
	pcr, err := s.m.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(s.ctx, &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "req-", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: src.SignerName, PodName: pod.Name, PodUID: pod.UID,
			ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID, NodeName: types.NodeName(node.Name), NodeUID: node.UID,
			MaxExpirationSeconds: src.MaxExpirationSeconds, StubPKCS10Request: stub, UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("while creating PodCertificateRequest: %w", err)
	}
	pc.request, pc.requestKey = pcr.Name, key
	return nil
}

// newCertificateKey is a private key of keyType (the projection's names),
// PEM-encoded as PKCS#8, and the stub PKCS#10 request that proves it is
// held.
func newCertificateKey(keyType string) (keyPEM, stub []byte, err error) {
	var key crypto.Signer
	switch keyType {
	case "RSA3072":
		key, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		key, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, err
	}
	if stub, err = x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key); err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), stub, nil
}

// cleanChain is the CERTIFICATE blocks of a chain, without headers or
// text between them.
func cleanChain(in []byte) []byte {
	var out []byte
	for {
		var block *pem.Block
		if block, in = pem.Decode(in); block == nil {
			return out
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})...)
	}
}
