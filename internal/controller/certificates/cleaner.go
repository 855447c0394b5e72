package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// How often the cleaner looks, and how long requests are kept, as
// upstream's csrcleaner.
const (
	cleanInterval = time.Hour
	// doneTTL keeps issued, denied and failed requests.
	doneTTL = time.Hour
	// pendingTTL keeps requests nobody decided on, and approved ones the
	// signer never issued.
	pendingTTL = 24 * time.Hour
)

// CleanupReason says why csr should be deleted at now, or "" when it should
// be kept:
//   - approved and issued, approved more than an hour ago;
//   - denied, or failed, more than an hour ago;
//   - pending (no condition at all) and created more than 24 hours ago;
//   - approved and issued a certificate that has expired;
//   - approved more than 24 hours ago and never issued.
//
// A condition's age is that of its lastUpdateTime; a zero time is never old.
func CleanupReason(csr *certificatesv1.CertificateSigningRequest, now time.Time) string {
	olderThan := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	issued := len(csr.Status.Certificate) > 0
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateApproved && issued && olderThan(c.LastUpdateTime, doneTTL):
			return "issued more than " + doneTTL.String() + " ago"
		case c.Type == certificatesv1.CertificateDenied && olderThan(c.LastUpdateTime, doneTTL):
			return "denied more than " + doneTTL.String() + " ago"
		case c.Type == certificatesv1.CertificateFailed && olderThan(c.LastUpdateTime, doneTTL):
			return "failed more than " + doneTTL.String() + " ago"
		}
	}
	if len(csr.Status.Conditions) == 0 && olderThan(csr.CreationTimestamp, pendingTTL) {
		return "pending for more than " + pendingTTL.String()
	}
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateApproved && issued && expired(csr.Status.Certificate, now):
			return "its certificate has expired"
		case c.Type == certificatesv1.CertificateApproved && !issued && olderThan(c.LastUpdateTime, pendingTTL):
			return "approved more than " + pendingTTL.String() + " ago and never issued"
		}
	}
	return ""
}

// expired tells whether the first certificate of certPEM has expired at
// now; one that does not parse has not.
func expired(certPEM []byte, now time.Time) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return err == nil && now.After(cert.NotAfter)
}

// runCleaner cleans once the informer has synced, then every
// cleanInterval, until ctx ends.
func (c *Controller) runCleaner(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	ticker := c.clock.NewTicker(cleanInterval)
	defer ticker.Stop()
	for {
		c.clean(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// clean deletes the requests CleanupReason gives a reason for.
func (c *Controller) clean(ctx context.Context) {
	csrs, err := c.csrs.List(labels.Everything())
	if err != nil {
		c.log.Error("cannot list certificate signing requests to clean", "err", err)
		return
	}
	now := c.clock.Now()
	for _, csr := range csrs {
		reason := CleanupReason(csr, now)
		if reason == "" {
			continue
		}
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &csr.UID}})
		switch {
		case err == nil:
			c.log.Info("deleted a certificate signing request", "csr", csr.Name, "why", reason)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or replaced by a new request of that name.
		default:
			c.log.Error("cannot delete a certificate signing request", "csr", csr.Name, "why", reason, "err", err)
		}
	}
}
