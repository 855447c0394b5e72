package certificates

import (
	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/worker"
)

// signerValidationFailure is the reason of the Failed condition of a
// request that breaks its signer's rules.
const signerValidationFailure = "SignerValidationFailure"

// sign issues the certificate of the request named key once it is
// approved, or marks it Failed when it breaks its signer's rules. Requests
// not approved, denied, failed, already issued or for another signer are
// left alone.
func (c *Controller) sign(ctx context.Context, key string) (worker.Result, error) {
	csr := c.pending(key)
	if csr == nil {
		return worker.Result{}, nil
	}
	if approved, denied := approval(csr); !approved || denied || hasTrueCondition(csr, certificatesv1.CertificateFailed) {
		return worker.Result{}, nil
	}
	if !signs(csr.Spec.SignerName) {
		return worker.Result{}, nil
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		// The apiserver's validation lets no such request in.
		return worker.Result{}, worker.Terminal(fmt.Errorf("parse the request of csr %q: %w", key, err))
	}
	_, invalid := ValidateRequest(csr.Spec.SignerName, req, csr.Spec.Usages)
	if invalid != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: signerValidationFailure,
			Message: invalid.Error(), LastUpdateTime: metav1.NewTime(c.clock.Now()),
		})
		if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("mark csr %q failed: %w", key, err)
		}
		c.log.Info("request breaks its signer's rules; marked Failed", "csr", key, "signer", csr.Spec.SignerName, "reason", invalid.Error())
		return worker.Result{}, nil
	}
	cert, err := c.ca.issue(req, csr.Spec.Usages, lifetime(csr.Spec.ExpirationSeconds, c.maxDuration), c.clock.Now())
	if errors.Is(err, errUnsignable) {
		return worker.Result{}, worker.Terminal(fmt.Errorf("sign csr %q: %w", key, err))
	}
	if err != nil {
		return worker.Result{}, fmt.Errorf("sign csr %q: %w", key, err)
	}
	csr.Status.Certificate = cert
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return worker.Result{}, fmt.Errorf("write the certificate of csr %q: %w", key, err)
	}
	c.log.Info("issued a certificate", "csr", key, "signer", csr.Spec.SignerName)
	return worker.Result{}, nil
}

// signs tells whether the signer issues certificates for signerName.
func signs(signerName string) bool {
	switch signerName {
	case certificatesv1.KubeAPIServerClientSignerName, certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeletServingSignerName:
		return true
	}
	return false
}
