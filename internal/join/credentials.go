package join

import (
	"crypto/tls"
	"crypto/x509"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"orch/internal/pki"
)

// Credentials are a joined node's certificates. They change when the
// Renewer renews them; the TLS configurations it hands out always use the
// current ones.
type Credentials struct {
	// Server is the server's URL, e.g. https://10.0.0.1:6443.
	Server string
	// NodeName is the node the certificates are for.
	NodeName string
	// CAPEM is the cluster CA, checked against the token.
	CAPEM []byte
	// KubeconfigPath is data-dir/agent/kubelet.kubeconfig.
	KubeconfigPath string

	caPool *x509.CertPool
	paths  paths
	// dialer makes the connections of RESTConfig; renewal closes them so
	// that new ones present the new client certificate.
	dialer *connrotation.Dialer
	// servers picks the server each new connection goes to.
	servers *Servers

	// refused receives when the apiserver answered 401 to these
	// certificates (see refusedTransport); the Renewer renews then.
	refused chan struct{}

	// through changes every RESTConfig (see Through); nil: none.
	through func(*rest.Config) *rest.Config

	mu     sync.RWMutex
	live   *liveCerts
	issued *issuedCerts
}

// Through makes RESTConfig and RESTConfigFor return change(config): the
// agent sends its clients through its local store. Call it before
// making clients.
func (c *Credentials) Through(change func(*rest.Config) *rest.Config) { c.through = change }

func newCredentials(c checked, caPEM []byte, issued *issuedCerts) (*Credentials, error) {
	live, err := checkIssued(c, caPEM, issued)
	if err != nil {
		return nil, err
	}
	pool, err := pki.CAPoolFromPEM(caPEM)
	if err != nil {
		return nil, err
	}
	servers := newServers(strings.TrimPrefix(c.Server, "https://"), serversFile(c.paths), c.Log)
	return &Credentials{
		Server: c.Server, NodeName: c.NodeName, CAPEM: caPEM, KubeconfigPath: c.paths.kubeconfig,
		caPool: pool, paths: c.paths, dialer: connrotation.NewDialer(servers.DialContext), servers: servers,
		live: live, issued: issued, refused: make(chan struct{}, 1),
	}, nil
}

// Cluster is the cluster-wide settings the server gave with the
// certificates.
func (c *Credentials) Cluster() Cluster {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.issued.cluster
}

// ClientCertificate is the current kubelet client certificate (Leaf set).
func (c *Credentials) ClientCertificate() *tls.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return &c.live.client
}

// HasIdentity reports whether the server issued a client certificate for
// component user (one of ComponentUsers); without one, RESTConfigFor(user)
// acts as the node.
func (c *Credentials) HasIdentity(user string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.live.components[user] != nil
}

// clientCertificateFor is component user's current client certificate,
// or the node's while the server has issued none for user.
func (c *Credentials) clientCertificateFor(user string) *tls.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if cert := c.live.components[user]; cert != nil {
		return cert
	}
	return &c.live.client
}

// ServingCertificate is the current kubelet serving certificate (Leaf set).
func (c *Credentials) ServingCertificate() *tls.Certificate {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return &c.live.serving
}

// CAPool is a pool holding the cluster CA.
func (c *Credentials) CAPool() *x509.CertPool { return c.caPool }

// ClientTLSConfig trusts the cluster CA and presents the current client
// certificate on every handshake.
func (c *Credentials) ClientTLSConfig() *tls.Config {
	return c.clientTLSConfig(func() *tls.Certificate { return c.ClientCertificate() })
}

func (c *Credentials) clientTLSConfig(current func() *tls.Certificate) *tls.Config {
	return &tls.Config{
		RootCAs:    c.caPool,
		MinVersion: tls.VersionTLS12,
		// Connections go to whichever server answers (see Servers): the
		// name every server's certificate has is checked.
		ServerName: "kubernetes",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return current(), nil
		},
	}
}

// ServingTLSConfig serves the current serving certificate (for the
// kubelet's port 10250) and verifies client certificates signed by the
// cluster CA when clients give one; the kubelet decides what anonymous
// requests may do.
func (c *Credentials) ServingTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.VerifyClientCertIfGiven,
		ClientCAs:  c.caPool,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.ServingCertificate(), nil
		},
	}
}

// Servers is the load balancer RESTConfig's connections go through.
func (c *Credentials) Servers() *Servers { return c.servers }

// RESTConfig is a client-go configuration for the servers as this node
// (system:node:NAME). Its connections go to whichever server answers (see
// Servers), so it verifies the name every server's certificate has,
// "kubernetes", against the cluster CA. It keeps working across renewals: each handshake
// presents the current client certificate, and a renewal closes the open
// connections so the server sees the new one (as upstream's kubelet does).
func (c *Credentials) RESTConfig() *rest.Config {
	return c.viaThrough(c.nodeRESTConfig())
}

// nodeRESTConfig is RESTConfig without Through: its requests go to the
// servers themselves, never answered by the agent's local store (the
// Renewer's CertificateSigningRequest needs the server's answers, and the
// store has nothing to keep of it).
func (c *Credentials) nodeRESTConfig() *rest.Config {
	return c.restConfig(c.ClientTLSConfig(), "orch-agent/"+c.NodeName)
}

// RESTConfigFor is RESTConfig for the agent's component user (one of
// ComponentUsers): it presents that user's client certificate, or the
// node's while the server has issued none for user (a server of an older
// version; see HasIdentity). A renewal that brings the component's
// certificate switches to it.
func (c *Credentials) RESTConfigFor(user string) *rest.Config {
	tlsConfig := c.clientTLSConfig(func() *tls.Certificate { return c.clientCertificateFor(user) })
	return c.viaThrough(c.restConfig(tlsConfig, "orch-agent/"+c.NodeName+" ("+user+")"))
}

// viaThrough is cfg changed as Through asked.
func (c *Credentials) viaThrough(cfg *rest.Config) *rest.Config {
	if c.through != nil {
		return c.through(cfg)
	}
	return cfg
}

func (c *Credentials) restConfig(tlsConfig *tls.Config, userAgent string) *rest.Config {
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         c.dialer.DialContext,
	})
	// QPS and Burst are upstream's kubelet defaults (--kube-api-qps 50,
	// --kube-api-burst 100): client-go's own 5/10 throttles a node that
	// starts many pods at once.
	return &rest.Config{Host: c.Server, Transport: refusedTransport{next: transport, refused: c.refused}, UserAgent: userAgent, QPS: 50, Burst: 100}
}

// set replaces the certificates and closes the connections made with the
// old client certificates.
func (c *Credentials) set(live *liveCerts, issued *issuedCerts) {
	c.mu.Lock()
	c.live, c.issued = live, issued
	c.mu.Unlock()
	c.dialer.CloseAll()
}

// withClient is the current certificates with the node's client
// certificate replaced by cert (for key, certPEM its PEM): what a renewal
// of that one alone makes current (the Renewer's CertificateSigningRequest).
func (c *Credentials) withClient(cert tls.Certificate, certPEM []byte, key keyPair) (*liveCerts, *issuedCerts) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	live, issued := *c.live, *c.issued
	live.components, issued.components = maps.Clone(live.components), maps.Clone(issued.components)
	live.client = cert
	issued.clientCertPEM, issued.clientKey = certPEM, key
	return &live, &issued
}

// writeKubeconfig writes data-dir/agent/kubelet.kubeconfig (mode 0600) with
// the current client certificate and key.
func (c *Credentials) writeKubeconfig() error {
	c.mu.RLock()
	issued := c.issued
	c.mu.RUnlock()
	return c.writeKubeconfigFor(issued)
}

func (c *Credentials) writeKubeconfigFor(issued *issuedCerts) error {
	return pki.WriteKubeconfig(c.KubeconfigPath, 0o600, c.Server, c.CAPEM, issued.clientCertPEM, issued.clientKey.pem)
}

// renewAt is when the certificates are due: when a third of the life of
// any one remains; at once (the zero time) when the stored ones predate
// component certificates, which the server has then never been asked for.
func (c *Credentials) renewAt() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.issued.componentsKnown {
		return time.Time{}
	}
	due := dueAt(c.live.client.Leaf)
	for _, cert := range append([]*tls.Certificate{&c.live.serving}, slices.Collect(maps.Values(c.live.components))...) {
		if t := dueAt(cert.Leaf); t.Before(due) {
			due = t
		}
	}
	return due
}

// clientRenewAt is when the node's client certificate alone is due.
func (c *Credentials) clientRenewAt() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return dueAt(c.live.client.Leaf)
}

// dueAt is when a third of cert's life remains.
func dueAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life * 2 / 3)
}

// componentIdentities is which component users have a certificate now.
func (c *Credentials) componentIdentities() map[string]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string]bool{}
	for user := range c.live.components {
		out[user] = true
	}
	return out
}
