// Package join is the agent's side of joining an orch cluster securely.
//
// Join parses the token K10<sha256 of the CA>::node:<secret> (the agent
// token; the server token ::server: works too), fetches the server's CA
// from /cacerts without trusting anything, refuses to go on if its hash is
// not the token's, and only then, over TLS verified against that CA, sends
// the secret with certificate requests for the node's
// kubelet: a client certificate (CN=system:node:NAME, O=system:nodes) and a
// serving certificate for the node's hostname and IPs, and client
// certificates for the agent's components that act under identities of
// their own (ComponentUsers: the Service proxy, the cluster DNS, the pod
// routes; see Credentials.RESTConfigFor). Private keys never leave the
// node. The certificates are kept in data-dir/agent/tls and
// reused on the next start while they are valid for the same node;
// data-dir/agent/kubelet.kubeconfig lets the kubelet use them.
//
// A Renewer renews all of them when a third of their life remains,
// without a restart: Credentials hands the current ones to TLS through
// callbacks (GetClientCertificate, GetCertificate). When the join endpoint
// refuses for good (a changed token), it renews the kubelet client
// certificate alone through a CertificateSigningRequest, as upstream's
// kubelet does; the serving and component certificates are renewed only
// through the join endpoint.
//
// A token may also be a bare passphrase (no K10 part): the agent then
// trusts the CA /cacerts gives on first use, with a warning naming its hash,
// keeps it, and from then on accepts only that CA, as a full token would.
//
// The server side is internal/server/join.go; api.go holds the HTTP API
// both share. This package is pure client code: it imports neither the
// server nor the apiserver.
package join

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"orch/internal/pki"
)

// Config is what Join needs.
type Config struct {
	// Server is the URL of an orch server, e.g. https://10.0.0.1:6443.
	Server string
	// Token is the join token from data-dir/server/token on the server.
	Token string
	// NodeName is the Node the kubelet registers as.
	NodeName string
	// NodeIPs and Hostname are what the serving certificate covers (it also
	// covers NodeName); an empty Hostname means NodeName.
	NodeIPs  []net.IP
	Hostname string
	// DataDir is the agent's --data-dir; files go to DataDir/agent.
	DataDir string
	// Log is where retries and renewals are reported; nil means slog.Default().
	Log *slog.Logger
	// Clock is the time used to judge certificates and to wait; nil means
	// the real clock.
	Clock clock.WithTicker

	// backoff bounds for retries; zero means 1s and 30s.
	initialBackoff, maxBackoff time.Duration
}

// checked is Config validated, with defaults filled in and the token parsed.
type checked struct {
	Config
	// caHash is the CA the server must have: the token's, or for a
	// passphrase the one trusted on first use (pinned), or "" before that.
	caHash, secret string
	// passphrase: the token has no CA hash; pinned: caHash is the stored
	// CA's, trusted on first use.
	passphrase, pinned bool
	paths              paths
}

func (cfg Config) check() (checked, error) {
	c := checked{Config: cfg}
	if cfg.Log == nil {
		c.Log = slog.Default()
	}
	if cfg.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.initialBackoff <= 0 {
		c.initialBackoff = time.Second
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = 30 * time.Second
	}
	u, err := url.Parse(cfg.Server)
	if cfg.Server == "" || err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return c, fmt.Errorf("orch agent: --server %q is not the URL of an orch server (e.g. https://10.0.0.1:6443)", cfg.Server)
	}
	c.Server = "https://" + u.Host
	t, err := pki.ParseJoinToken(cfg.Token)
	if err != nil {
		return c, fmt.Errorf("orch agent: --token: %w", err)
	}
	c.caHash, c.secret, c.passphrase = t.CAHash, t.Secret, t.Passphrase()
	if msgs := validation.IsDNS1123Subdomain(cfg.NodeName); len(msgs) > 0 {
		return c, fmt.Errorf("orch agent: node name %q is not valid (%s): set --node-name to a lower-case DNS name", cfg.NodeName, strings.Join(msgs, "; "))
	}
	if c.Hostname == "" {
		c.Hostname = cfg.NodeName
	}
	c.Hostname = strings.ToLower(c.Hostname)
	if msgs := validation.IsDNS1123Subdomain(c.Hostname); len(msgs) > 0 {
		return c, fmt.Errorf("orch agent: hostname %q is not valid for a certificate (%s)", c.Hostname, strings.Join(msgs, "; "))
	}
	if cfg.DataDir == "" {
		return c, fmt.Errorf("orch agent: no --data-dir given (e.g. /var/lib/orch)")
	}
	c.paths = pathsFor(cfg.DataDir)
	return c, nil
}

// servingDNSNames are the DNS names of the serving certificate.
func (c checked) servingDNSNames() []string {
	if c.Hostname == c.NodeName {
		return []string{c.NodeName}
	}
	return []string{c.Hostname, c.NodeName}
}

// Join returns the node's credentials: the stored ones if they are still
// valid for this node and this token's CA, or new ones from the server.
// It retries, with exponential backoff up to 30 seconds, while the server
// cannot be reached, and returns the last error when ctx ends; every other
// failure returns at once with an error that says what to do.
func Join(ctx context.Context, cfg Config) (*Credentials, error) {
	c, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if err := c.paths.mkdirs(); err != nil {
		return nil, err
	}
	c.pinStoredCA()
	if creds, err := loadStored(c); err == nil {
		c.Log.Info("using the stored node certificates", "node", c.NodeName, "dir", c.paths.tls,
			"expires", creds.ClientCertificate().Leaf.NotAfter.UTC().Format(time.RFC3339))
		return creds, nil
	} else {
		c.Log.Debug("stored node certificates cannot be used; asking the server", "reason", err)
	}
	password, err := c.paths.nodePassword()
	if err != nil {
		return nil, err
	}
	clientKey, err := loadOrNewKey(c.paths.clientKey)
	if err != nil {
		return nil, err
	}
	servingKey, err := loadOrNewKey(c.paths.servingKey)
	if err != nil {
		return nil, err
	}
	componentKeys := map[string]keyPair{}
	for _, user := range ComponentUsers() {
		if componentKeys[user], err = loadOrNewKey(c.paths.componentKey(user)); err != nil {
			return nil, err
		}
	}
	var caPEM []byte
	var issued *issuedCerts
	err = retry(ctx, c, "join", func(ctx context.Context) error {
		var err error
		if caPEM, err = fetchCA(ctx, c); err != nil {
			return err
		}
		issued, err = requestCertificates(ctx, c, caPEM, password, clientKey, servingKey, componentKeys)
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.passphrase && !c.pinned {
		warnTrustOnFirstUse(c, caPEM, pki.AgentTokenUser)
	}
	if err := c.paths.store(caPEM, issued); err != nil {
		return nil, err
	}
	creds, err := newCredentials(c, caPEM, issued)
	if err != nil {
		return nil, err
	}
	if err := creds.writeKubeconfig(); err != nil {
		return nil, err
	}
	c.Log.Info("joined the cluster", "server", c.Server, "node", c.NodeName, "dir", c.paths.tls)
	return creds, nil
}

// retry runs op until it succeeds, fails with an error that retrying does
// not fix, or ctx ends (then the last error that ctx did not cut short is
// returned). Failures are logged at the first one and then at most once a
// minute.
func retry(ctx context.Context, c checked, what string, op func(context.Context) error) error {
	delay := c.initialBackoff
	var lastLog time.Time
	var previous error
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || !retriable(err) {
			return err
		}
		if ctx.Err() != nil {
			// An attempt that ctx cut short ("context deadline exceeded")
			// says less about the server than the one before it.
			if previous != nil {
				err = previous
			}
			return fmt.Errorf("orch agent: gave up after %d attempts: %w", attempt, err)
		}
		previous = err
		if now := c.Clock.Now(); attempt == 1 || now.Sub(lastLog) >= time.Minute {
			c.Log.Warn("cannot reach the server yet; retrying with backoff", "what", what, "server", c.Server,
				"attempt", attempt, "next-try-in", delay.String(), "err", err)
			lastLog = now
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("orch agent: gave up after %d attempts: %w", attempt, err)
		case <-c.Clock.After(delay):
		}
		delay = min(2*delay, c.maxBackoff)
	}
}

// maxCABytes bounds the /cacerts answer.
const maxCABytes = 1 << 20

// fetchCA gets the server's CA without trusting anything and checks it
// against the token's hash before anything else is sent.
func fetchCA(ctx context.Context, c checked) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// Only for this one request: what it returns is trusted only if
		// its hash is the token's.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+CACertsPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unreachable(c, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCABytes))
	if err != nil {
		return nil, unreachable(c, err)
	}
	if code := resp.StatusCode; code == http.StatusTooManyRequests || code >= 500 {
		return nil, statusError(c, resp, body, "GET "+CACertsPath)
	} else if code != http.StatusOK {
		// Nothing secret was sent: the server does not serve joins.
		return nil, &serverError{kind: ErrRejected, msg: fmt.Sprintf("orch agent: %s answered %d to GET %s: is it an orch server (of a version that serves joins)? check --server",
			c.Server, code, CACertsPath)}
	}
	switch err := pki.VerifyCAHash(body, c.caHash); {
	case c.caHash == "":
		// A passphrase, and no CA trusted yet: this one is, on first use
		// (see warnTrustOnFirstUse).
	case err != nil && c.pinned:
		return nil, fmt.Errorf("orch agent: %w: the server at %s sent a CA with hash %s, not the one this node trusted on first use (%s, hash %s): "+
			"a machine in the middle, or a new cluster; if the cluster's CA did change, remove %s, or use the full token K10<hash>::node:<passphrase>; nothing was sent",
			ErrCAHashMismatch, c.Server, pki.CAHash(body), c.paths.ca, c.caHash, c.paths.ca)
	case err != nil:
		return nil, fmt.Errorf("orch agent: %w: wrong token, or a machine in the middle (the server at %s sent a CA with hash %s, "+
			"the token names %s); copy the token again from the server (data-dir/server/agent-token) and check --server; nothing was sent",
			ErrCAHashMismatch, c.Server, pki.CAHash(body), c.caHash)
	}
	if _, err := pki.CAPoolFromPEM(body); err != nil {
		return nil, fmt.Errorf("orch agent: the server's CA matches the token but is unreadable: %w", err)
	}
	return body, nil
}

// issuedCerts is what the server signed, with the keys it was signed for.
type issuedCerts struct {
	clientCertPEM, servingCertPEM []byte
	clientKey, servingKey         keyPair
	cluster                       Cluster // the settings that came with them
	// components are the component client certificates the server
	// issued, by user; a server of an older version issues none.
	components map[string]componentCert
	// componentsKnown is false for certificates an agent of an older
	// version stored: the server was never asked for components, so the
	// Renewer asks at once.
	componentsKnown bool
}

// componentCert is a component's client certificate and key.
type componentCert struct {
	certPEM []byte
	key     keyPair
}

// requestCertificates sends the token's secret and CSRs for the node's
// keys and the components' to the server, over TLS verified against
// caPEM, and checks the answer.
func requestCertificates(ctx context.Context, c checked, caPEM []byte, password string, clientKey, servingKey keyPair, componentKeys map[string]keyPair) (*issuedCerts, error) {
	user := NodeUser(c.NodeName)
	clientCSR, err := pki.NewCSR(clientKey.signer, user, []string{NodesGroup}, nil, nil)
	if err != nil {
		return nil, err
	}
	servingCSR, err := pki.NewCSR(servingKey.signer, user, []string{NodesGroup}, c.servingDNSNames(), c.NodeIPs)
	if err != nil {
		return nil, err
	}
	body := CertificatesRequest{NodeName: c.NodeName, Hostname: c.Hostname, NodePassword: password,
		ClientCSR: string(clientCSR), ServingCSR: string(servingCSR), ComponentCSRs: map[string]string{}}
	for component, key := range componentKeys {
		csr, err := pki.NewCSR(key.signer, component, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		body.ComponentCSRs[component] = string(csr)
	}
	for _, ip := range c.NodeIPs {
		body.NodeIPs = append(body.NodeIPs, ip.String())
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	pool, err := pki.CAPoolFromPEM(caPEM)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Server+CertificatesPath, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(TokenUser, c.secret)
	resp, err := client.Do(req)
	if err != nil {
		if isCertificateError(err) {
			host, _, _ := net.SplitHostPort(strings.TrimPrefix(c.Server, "https://"))
			return nil, fmt.Errorf("orch agent: the server's certificate does not verify for %s against its CA: %w; "+
				"use an address the server's certificate names in --server, or start the server with --tls-san %s", c.Server, err, host)
		}
		return nil, unreachable(c, err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxCABytes))
	if err != nil {
		return nil, unreachable(c, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(c, resp, respBody, "POST "+CertificatesPath)
	}
	var answer CertificatesResponse
	if err := json.Unmarshal(respBody, &answer); err != nil {
		return nil, fmt.Errorf("orch agent: cannot decode the server's node certificates: %w (is %s an orch server of the same version?)", err, c.Server)
	}
	issued := &issuedCerts{clientCertPEM: []byte(answer.ClientCertificate), servingCertPEM: []byte(answer.ServingCertificate),
		clientKey: clientKey, servingKey: servingKey, cluster: withDefaults(answer.Cluster),
		components: map[string]componentCert{}, componentsKnown: true}
	for component, certPEM := range answer.ComponentCertificates {
		key, asked := componentKeys[component]
		if !asked {
			return nil, fmt.Errorf("orch agent: the server at %s sent a certificate for %q, which this agent did not ask for (is it an orch server of the same version?)", c.Server, component)
		}
		issued.components[component] = componentCert{certPEM: []byte(certPEM), key: key}
	}
	if _, err := checkIssued(c, caPEM, issued); err != nil {
		return nil, fmt.Errorf("orch agent: the server's node certificates do not fit this node: %w (is %s an orch server of the same version?)", err, c.Server)
	}
	return issued, nil
}

// pinStoredCA makes a passphrase's agent trust the CA it stored on first
// use, as a full token would name it.
func (c *checked) pinStoredCA() {
	if !c.passphrase || c.paths.ca == "" {
		return
	}
	if data, err := os.ReadFile(c.paths.ca); err == nil {
		if _, err := pki.CAPoolFromPEM(data); err == nil {
			c.caHash, c.pinned = pki.CAHash(data), true
		}
	}
}

// warnTrustOnFirstUse says that the CA was trusted without a check, and
// how to pin it: the full token of user with the passphrase as secret.
func warnTrustOnFirstUse(c checked, caPEM []byte, user string) {
	hash := pki.CAHash(caPEM)
	c.Log.Warn(fmt.Sprintf("the token is a passphrase, with no CA hash: trusted the server's CA on first use without checking it (CA hash %s); "+
		"use the full token K10%s::%s:<passphrase> to pin it", hash, hash, user), "server", c.Server, "ca-hash", hash)
}

func unreachable(c checked, err error) error {
	return fmt.Errorf("%w at %s: %w; check --server, that the server runs and that its port is open from here", ErrUnreachable, c.Server, err)
}

// statusError turns a refusal into an error that says what to do.
func statusError(c checked, resp *http.Response, body []byte, what string) error {
	msg := strings.TrimSpace(string(body))
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		msg = status.Message
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized:
		return &serverError{kind: ErrUnauthorized, msg: fmt.Sprintf("orch agent: the server at %s refused the join token (%s): "+
			"its CA matched, so the server is the right one but the secret is wrong or was changed; copy the token again from the server "+
			"(an agent: data-dir/server/agent-token; a server: data-dir/server/token)", c.Server, msg)}
	case code == http.StatusConflict:
		return &serverError{kind: ErrNodeNameTaken, msg: "orch agent: " + msg}
	case code == http.StatusNotFound:
		return &serverError{kind: ErrRejected, msg: fmt.Sprintf("orch agent: %s answered 404 to %s: is it an orch server (of a version that serves joins)?", c.Server, what)}
	case code == http.StatusTooManyRequests || code >= 500:
		return fmt.Errorf("%w: %s answered %d to %s: %s", ErrUnreachable, c.Server, code, what, msg)
	default:
		return &serverError{kind: ErrRejected, msg: fmt.Sprintf("orch agent: the server at %s refused %s (%d): %s", c.Server, what, code, msg)}
	}
}

// keyPair is a private key with its PEM, possibly not yet on disk.
type keyPair struct {
	signer crypto.Signer
	pem    []byte
}

func newKeyPair() (keyPair, error) {
	signer, pemData, err := pki.NewPrivateKey()
	return keyPair{signer, pemData}, err
}

// withDefaults fills what an older server left out of c.
func withDefaults(c Cluster) Cluster {
	if c.DNS == "" {
		c.DNS = DefaultCluster.DNS
	}
	if c.Domain == "" {
		c.Domain = DefaultCluster.Domain
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultCluster.ClusterCIDR
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = DefaultCluster.ServiceCIDR
	}
	return c
}
