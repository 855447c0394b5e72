package certificates

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/pki"
	"orch/internal/worker"
)

// Name is the controller's name in the server's controller list.
const Name = "certificates"

// DefaultMaxDuration is the longest certificate the signer issues unless
// Options say otherwise: upstream's --cluster-signing-duration default.
const DefaultMaxDuration = 365 * 24 * time.Hour

// CA is the certificate authority the signer issues from.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// ParseCA reads a CA from its certificate and private key in PEM, as the
// server's TLS directory holds them (pki.CACertFile, pki.CAKeyFile).
func ParseCA(certPEM, keyPEM []byte) (CA, error) {
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		return CA{}, fmt.Errorf("the CSR signer's CA certificate: %w", err)
	}
	key, err := pki.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return CA{}, fmt.Errorf("the CSR signer's CA key: %w", err)
	}
	return CA{Cert: cert, Key: key}, nil
}

// check says whether ca can sign.
func (ca CA) check() error {
	switch {
	case ca.Cert == nil || ca.Key == nil:
		return errors.New("the CSR signer needs a CA certificate and its key")
	case !ca.Cert.IsCA:
		return fmt.Errorf("the CSR signer's certificate %q is not a CA certificate", ca.Cert.Subject.CommonName)
	case !pki.KeyMatches(ca.Key, ca.Cert):
		return fmt.Errorf("the CSR signer's key does not match its CA certificate %q", ca.Cert.Subject.CommonName)
	}
	return nil
}

// Options tune the controller; the zero value is upstream's defaults.
type Options struct {
	// MaxDuration caps the lifetime of the certificates the signer issues
	// (upstream's --cluster-signing-duration); zero means
	// DefaultMaxDuration.
	MaxDuration time.Duration
}

// Controller runs the signer, the approver and the cleaner.
type Controller struct {
	client       kubernetes.Interface
	csrs         certificateslisters.CertificateSigningRequestLister
	synced       cache.InformerSynced
	signQueue    workqueue.TypedRateLimitingInterface[string]
	approveQueue workqueue.TypedRateLimitingInterface[string]
	ca           CA
	maxDuration  time.Duration
	log          *slog.Logger
	clock        clock.WithTicker
}

// New builds the controllers and registers their informer; ca signs the
// certificates.
func New(ctx controller.Context, ca CA, opts Options) (*Controller, error) {
	if err := ca.check(); err != nil {
		return nil, err
	}
	if opts.MaxDuration < 0 {
		return nil, fmt.Errorf("the CSR signer's maximum certificate duration must be positive, got %s", opts.MaxDuration)
	}
	if opts.MaxDuration == 0 {
		opts.MaxDuration = DefaultMaxDuration
	}
	informer := ctx.Informers.Certificates().V1().CertificateSigningRequests()
	c := &Controller{
		client: ctx.Client, csrs: informer.Lister(), synced: informer.Informer().HasSynced,
		signQueue: newQueue("csrsigning", ctx.Clock), approveQueue: newQueue("csrapproving", ctx.Clock),
		ca: ca, maxDuration: opts.MaxDuration, log: ctx.Log.With("controller", Name), clock: ctx.Clock,
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && len(csr.Status.Certificate) == 0 {
			c.signQueue.Add(csr.Name)
			c.approveQueue.Add(csr.Name)
		}
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }})
	if err != nil {
		return nil, fmt.Errorf("watch certificatesigningrequests: %w", err)
	}
	return c, nil
}

// newQueue is upstream's certificate controller queue: per-request back-off
// from 200 ms to 1000 s, and at most 10 retries a second overall (the
// default controller limiter's bucket).
func newQueue(name string, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[string] {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 1000*time.Second),
		workqueue.DefaultTypedControllerRateLimiter[string]())
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk})
}

// Start runs the signer, the approver and the cleaner until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	synced := []cache.InformerSynced{c.synced}
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = worker.Run(ctx, c.signQueue, c.sign, worker.Options{Synced: synced, Log: c.log.With("loop", "csrsigning")})
	})
	wg.Go(func() {
		_ = worker.Run(ctx, c.approveQueue, c.approve, worker.Options{Synced: synced, Log: c.log.With("loop", "csrapproving")})
	})
	wg.Go(func() { c.runCleaner(ctx) })
	wg.Wait()
	return nil
}

// pending returns a copy of the request named key that has no certificate
// yet, or nil when it is gone or has one.
func (c *Controller) pending(key string) *certificatesv1.CertificateSigningRequest {
	csr, err := c.csrs.Get(key)
	if err != nil || len(csr.Status.Certificate) > 0 {
		return nil
	}
	return csr.DeepCopy()
}
