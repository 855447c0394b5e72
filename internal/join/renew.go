package join

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	csrclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
)

// Renewer renews a node's certificates when a third of their life remains,
// or at once when the apiserver stops accepting them (at most once per
// refusedPause):
// it asks the server with new keys and the join token (over TLS verified
// against the CA the node already trusts), stores the new files, rewrites
// the kubeconfig and swaps the certificates in the Credentials, so nothing
// has to restart.
//
// When the join endpoint refuses for good (an error retrying does not fix:
// the join token was changed, or refused) while the node's client
// certificate is due, the Renewer renews that one alone through a
// CertificateSigningRequest, as the node, with the client certificate it
// still has (see renewClientByCSR), as upstream's kubelet rotates it. The
// serving and component certificates are renewed only through the join
// endpoint: they are kept as they are, and the join endpoint is asked
// again every permanentRetry until it gives them (or they expire).
type Renewer struct {
	cfg   checked
	creds *Credentials
	log   *slog.Logger
	// csrs is the CertificateSigningRequests API as the node (nodeCSRs;
	// tests give a fake).
	csrs func() (csrclient.CertificateSigningRequestInterface, error)
}

// NewRenewer returns a Renewer for creds, which Join returned for cfg.
func NewRenewer(cfg Config, creds *Credentials) (*Renewer, error) {
	c, err := cfg.check()
	if err != nil {
		return nil, err
	}
	r := &Renewer{cfg: c, creds: creds, log: c.Log.With("component", "node-certificates", "node", c.NodeName)}
	r.csrs = r.nodeCSRs
	return r, nil
}

// permanentRetry is how long the Renewer waits after a failure that
// retrying soon does not fix (a changed token, a taken node name).
const permanentRetry = 5 * time.Minute

// maxWait bounds one wait, so a jump of the wall clock is noticed.
const maxWait = time.Hour

// refusedPause is the least time between two renewals for a refusal.
const refusedPause = time.Minute

// Start renews the certificates whenever they are due until ctx ends. A
// failure is logged and retried with backoff; the old certificates are used
// until they expire.
func (r *Renewer) Start(ctx context.Context) error {
	clk := r.cfg.Clock
	delay := r.cfg.initialBackoff
	var lastLog, lastRefused time.Time
	for {
		wait := r.creds.renewAt().Sub(clk.Now())
		if wait > 0 {
			refused := false
			select {
			case <-ctx.Done():
				return nil
			case <-clk.After(min(wait, maxWait)):
			case <-r.creds.refused:
				refused = clk.Now().Sub(lastRefused) >= refusedPause
			}
			if !refused {
				continue
			}
			lastRefused = clk.Now()
			r.log.Warn("the apiserver no longer accepts the node certificates (was the Node deleted?); asking for new ones")
		}
		byCSR, err := r.renewDue(ctx)
		if err == nil && byCSR {
			delay = r.cfg.initialBackoff
			if !r.creds.renewAt().After(clk.Now()) {
				// The serving or a component certificate is still due:
				// the join endpoint, which refused a moment ago, is
				// asked again later.
				select {
				case <-ctx.Done():
					return nil
				case <-clk.After(permanentRetry):
				}
			}
			continue
		}
		if err == nil {
			delay = r.cfg.initialBackoff
			cert := r.creds.ClientCertificate().Leaf
			r.log.Info("renewed the node certificates", "expires", cert.NotAfter.UTC().Format(time.RFC3339),
				"next-renewal", r.creds.renewAt().UTC().Format(time.RFC3339))
			if !r.creds.renewAt().After(clk.Now()) {
				// Renewing again at once would hammer the server.
				r.log.Warn("the server issued certificates that are already due for renewal: check the clocks of the server and this node",
					"next-try-in", permanentRetry.String())
				select {
				case <-ctx.Done():
					return nil
				case <-clk.After(permanentRetry):
				}
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		next := delay
		if !retriable(err) {
			next = permanentRetry
		} else {
			delay = min(2*delay, r.cfg.maxBackoff)
		}
		if now := clk.Now(); now.Sub(lastLog) >= time.Minute || lastLog.IsZero() {
			r.log.Warn("cannot renew the node certificates yet; retrying", "next-try-in", next.String(),
				"expires", r.creds.ClientCertificate().Leaf.NotAfter.UTC().Format(time.RFC3339), "err", err)
			lastLog = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(next):
		}
	}
}

// renewDue renews the certificates through the join endpoint (renew), or,
// when it refuses for good and the node's client certificate is due, that
// one alone through a CertificateSigningRequest (byCSR). err is the join
// endpoint's, with the CertificateSigningRequest's when that failed too.
func (r *Renewer) renewDue(ctx context.Context) (byCSR bool, err error) {
	err = r.renew(ctx)
	if err == nil || ctx.Err() != nil || retriable(err) || r.creds.clientRenewAt().After(r.cfg.Clock.Now()) {
		return false, err
	}
	name, csrErr := r.renewClientByCSR(ctx)
	if csrErr != nil {
		return false, fmt.Errorf("%w; renewing the client certificate through a CertificateSigningRequest failed too: %v", err, csrErr)
	}
	r.log.Warn(fmt.Sprintf("renewed the node's client certificate through a CertificateSigningRequest (the join endpoint refused: %v); "+
		"the serving and component certificates are renewed only through the join endpoint and are kept as they are", err),
		"csr", name, "expires", r.creds.ClientCertificate().Leaf.NotAfter.UTC().Format(time.RFC3339),
		"serving-expires", r.creds.ServingCertificate().Leaf.NotAfter.UTC().Format(time.RFC3339))
	return true, nil
}

// renew gets new certificates for new keys and makes them current.
func (r *Renewer) renew(ctx context.Context) error {
	password, err := r.cfg.paths.nodePassword()
	if err != nil {
		return err
	}
	clientKey, err := newKeyPair()
	if err != nil {
		return err
	}
	servingKey, err := newKeyPair()
	if err != nil {
		return err
	}
	componentKeys := map[string]keyPair{}
	for _, user := range ComponentUsers() {
		if componentKeys[user], err = newKeyPair(); err != nil {
			return err
		}
	}
	issued, err := requestCertificates(ctx, r.cfg, r.creds.CAPEM, password, clientKey, servingKey, componentKeys)
	if err != nil {
		return err
	}
	live, err := checkIssued(r.cfg, r.creds.CAPEM, issued)
	if err != nil {
		return fmt.Errorf("orch agent: renewed certificates do not fit: %w", err)
	}
	had := r.creds.componentIdentities()
	if err := r.install(live, issued); err != nil {
		return err
	}
	for _, user := range ComponentUsers() {
		switch _, has := live.components[user]; {
		case has && !had[user]:
			r.log.Info("the server issued a certificate for the component: it now acts under its own identity", "user", user)
		case !has && had[user]:
			r.log.Warn("the server issued no certificate for the component this time (a server of an older version?): it acts as the node until it does", "user", user)
		}
	}
	return nil
}

// install stores checked certificates, rewrites the kubeconfig and makes
// them current.
func (r *Renewer) install(live *liveCerts, issued *issuedCerts) error {
	if err := r.cfg.paths.store(r.creds.CAPEM, issued); err != nil {
		return err
	}
	// The kubeconfig first: whoever sees the new certificates finds them
	// in the files too.
	if err := r.creds.writeKubeconfigFor(issued); err != nil {
		return err
	}
	r.creds.set(live, issued)
	return nil
}
