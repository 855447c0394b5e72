package envtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/apiserver"
	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/registry/all"
	"orch/internal/cidr"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
	"orch/internal/storage"
	"orch/internal/version"
)

// Server is a running test apiserver: plain HTTP on loopback, every request
// authenticated as an admin unless it carries a bearer token (then the
// apiserver's own token authentication decides).
type Server struct {
	URL    string
	Config *rest.Config
	Etcd   *storage.EmbeddedEtcd
	Store  *storage.Etcd
	// API is the apiserver itself (for handlers a test builds around it).
	API *apiserver.Server
	// ServiceAccountKey signs the server's service account tokens.
	ServiceAccountKey *rsa.PrivateKey
	// FrontProxy is the request-header CA and the client certificate the
	// server presents to extension API servers (aggregation).
	FrontProxy pki.FrontProxy
}

// Options change what Start sets up.
type Options struct {
	// ServiceAccountAdmission turns on the ServiceAccount admission of pods,
	// which is off by default because no service account controller runs
	// here (as in upstream's integration tests).
	ServiceAccountAdmission bool
	// Now is the apiserver's clock for tokens; nil means time.Now.
	Now func() time.Time
	// KubeletTLS lets the apiserver reach (test) kubelets: it trusts their
	// serving certificates and presents a client certificate.
	KubeletTLS *tls.Config
	// RBAC creates the bootstrap RBAC policy (as `orch server` does at
	// start), for tests that act as users other than the admin (through
	// bearer tokens, or impersonation: ConfigAs).
	RBAC bool
	// NodeRegistrationSecret is the apiserver's (see apiserver.Config).
	NodeRegistrationSecret func(node string) (namespace, name string)
	// EnableAdmissionPlugins, DisableAdmissionPlugins and
	// PodSecurityConfigFile are the apiserver's (see apiserver.Config).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	PodSecurityConfigFile                           string
	// ServiceAccountMaxTokenExpiration and NoExtendedTokenExpiration are
	// the apiserver's (see apiserver.Config).
	ServiceAccountMaxTokenExpiration time.Duration
	NoExtendedTokenExpiration        bool
	// ServiceCIDRs are the apiserver's service CIDRs, primary first (two
	// of different families for dual stack); empty means 10.43.0.0/16.
	ServiceCIDRs []string
}

// Start runs etcd and the apiserver until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	etcd := startEtcd(t)
	store := storage.NewEtcd(etcd.Client)
	serviceCIDRs := serviceCIDRs(t, opts.ServiceCIDRs)
	log := Logger()
	key := signingKey(t)
	frontProxy, err := pki.EnsureFrontProxy(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	api, err := apiserver.New(apiserver.Config{
		// No client certificates reach this server: the client CA it
		// publishes is the front proxy's.
		Aggregation: &apiserver.AggregationConfig{ClientCAPEM: frontProxy.CACertPEM, RequestHeaderCAPEM: frontProxy.CACertPEM, ProxyClient: frontProxy.Client}, Storage: store, Resources: all.Resources(), ServiceCIDRs: serviceCIDRs, Version: version.Info(), Log: log,
		ServiceAccountKey: key, ExternalAddress: "127.0.0.1:6443", Now: opts.Now,
		DisableServiceAccountAdmission: !opts.ServiceAccountAdmission, NodeRegistrationSecret: opts.NodeRegistrationSecret, KubeletClient: kubeletClient(opts.KubeletTLS),
		EnableAdmissionPlugins: opts.EnableAdmissionPlugins, DisableAdmissionPlugins: opts.DisableAdmissionPlugins, PodSecurityConfigFile: opts.PodSecurityConfigFile,
		ServiceAccountMaxTokenExpiration: opts.ServiceAccountMaxTokenExpiration, NoExtendedTokenExpiration: opts.NoExtendedTokenExpiration,
		Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); api.Start(ctx) }()
	authenticated := filters.Authenticate(api, nil, nil, api)
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := filters.BearerToken(r.Header.Get("Authorization")); ok {
			authenticated.ServeHTTP(w, r)
			return
		}
		ctx := filters.WithUser(r.Context(), filters.User{Name: "test-admin", Groups: []string{"system:masters", filters.AuthenticatedGroup}})
		api.ServeHTTP(w, r.WithContext(ctx))
	})
	srv := httptest.NewServer(filters.Recover(log, admin))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	})
	cfg := &rest.Config{Host: srv.URL, QPS: -1, Timeout: 30 * time.Second}
	s := &Server{URL: srv.URL, Config: cfg, Etcd: etcd, Store: store, API: api, ServiceAccountKey: key, FrontProxy: frontProxy}
	select {
	case <-api.AuthorizersSynced():
	case <-time.After(30 * time.Second):
		t.Fatal("envtest: the apiserver's authorizers did not sync in 30s")
	}
	if opts.RBAC {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rbacpolicy.Reconcile(context.Background(), client); err != nil {
			t.Fatalf("envtest: the bootstrap RBAC policy: %v", err)
		}
		// The authorizers follow the watch caches: wait until they see the
		// policy (system:discovery lets any authenticated user read /api).
		probe := authz.Attributes{User: authz.User{Name: "probe", Groups: []string{authz.AuthenticatedGroup}}, Verb: "get", Path: "/api"}
		EventuallyTrue(t, "the authorizer to have the bootstrap policy", func() bool {
			d, _, _ := api.Authorizer().Authorize(context.Background(), probe)
			return d == authz.Allow
		})
	}
	return s
}

// serviceCIDRs parses the service CIDRs a test chose, or gives the default.
func serviceCIDRs(t testing.TB, cidrs []string) []*net.IPNet {
	if len(cidrs) == 0 {
		cidrs = []string{"10.43.0.0/16"}
	}
	out, err := cidr.ParseNets("envtest service CIDRs", strings.Join(cidrs, ","))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ConfigAs is a client configuration that acts as user in groups (the
// admin impersonates it, as kubectl --as does), for authorization tests.
func (s *Server) ConfigAs(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(s.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
	keyErr  error
)

// signingKey is one RSA key per test process: making one takes a while.
func signingKey(t testing.TB) *rsa.PrivateKey {
	keyOnce.Do(func() { key, keyErr = rsa.GenerateKey(rand.Reader, 2048) })
	if keyErr != nil {
		t.Fatal(keyErr)
	}
	return key
}

func kubeletClient(c *tls.Config) *apiserver.KubeletClientConfig {
	if c == nil {
		return nil
	}
	return &apiserver.KubeletClientConfig{TLS: c}
}

// startEtcd starts an embedded etcd on free loopback ports. A port found
// free can be taken by another test process before etcd binds it: then
// it tries again on other ports.
func startEtcd(t testing.TB) *storage.EmbeddedEtcd {
	t.Helper()
	for attempt := 1; ; attempt++ {
		etcd, err := storage.StartEtcd(storage.EtcdConfig{
			Dir: t.TempDir(), Name: "test", UnsafeNoFsync: true,
			ClientURL: "http://" + FreeAddr(t), PeerURL: "http://" + FreeAddr(t),
		})
		if err == nil {
			t.Cleanup(etcd.Close)
			return etcd
		}
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("embedded etcd, attempt %d: %v; again on other ports", attempt, err)
	}
}

// FreeAddr returns a loopback address whose port nothing listens on now.
func FreeAddr(t testing.TB) string {
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
