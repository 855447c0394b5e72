// Package apiserver serves the Kubernetes API over HTTP: discovery, OpenAPI,
// and generic REST handlers (get, list, watch, create, update, patch, delete,
// deletecollection and the status, scale and binding subresources) for every
// resource in the registry, stored through internal/storage. It also issues
// and checks service account tokens (serviceaccounts/token, TokenReview,
// SelfSubjectReview, issuer discovery; see tokens.go and package satoken),
// serves the resource metrics API (metrics.k8s.io, what kubectl top reads)
// from the kubelets' /stats/summary (metricsapi.go) and runs the built-in
// admission steps (admission.go).
package apiserver

import (
	"context"
	"crypto"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	psadmission "k8s.io/pod-security-admission/admission"

	"orch/internal/apiserver/apfbootstrap"
	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/satoken"
	"orch/internal/storage"
)

// Config is what the apiserver needs from the composition root.
type Config struct {
	Storage   storage.Interface
	Resources []registry.Resource
	// ServiceCIDRs are the ranges of cluster IPs: one, or two of
	// different families (dual stack), the primary first.
	ServiceCIDRs []*net.IPNet
	Version      version.Info
	Log          *slog.Logger
	// Checks are extra health checks (e.g. "etcd") shown on /readyz,
	// /livez and /healthz.
	Checks map[string]func(ctx context.Context) error
	// ReadyChecks are shown on /readyz only: what a server must have
	// before it takes traffic, though it is alive without it (e.g. an
	// etcd member that does not vote yet).
	ReadyChecks map[string]func(ctx context.Context) error

	// ServiceAccountKey signs service account tokens (RSA or ECDSA); nil
	// leaves serviceaccounts/token, bearer tokens and issuer discovery off.
	ServiceAccountKey crypto.Signer
	// ServiceAccountIssuer is the iss of the tokens; empty means
	// DefaultIssuer(ClusterDomain).
	ServiceAccountIssuer string
	// ClusterDomain is --cluster-domain; empty means cluster.local.
	ClusterDomain string
	// APIAudiences are the audiences tokens must have to be accepted by the
	// apiserver; empty means the issuer alone, as upstream.
	APIAudiences []string
	// ServiceAccountMaxTokenExpiration caps what a TokenRequest may ask
	// for (--service-account-max-token-expiration; 0: no cap);
	// NoExtendedTokenExpiration turns off upstream's year-long validity
	// (warning after an hour) of the tokens the kubelet projects
	// (--service-account-extend-token-expiration=false).
	ServiceAccountMaxTokenExpiration time.Duration
	NoExtendedTokenExpiration        bool
	// ExternalAddress is host:port clients reach the apiserver at; the
	// issuer discovery document's jwks_uri points there.
	ExternalAddress string
	// DisableServiceAccountAdmission turns the ServiceAccount admission of
	// pods off, as upstream's integration tests do where no service account
	// controller runs.
	DisableServiceAccountAdmission bool
	// Now is the clock of token issue and checks; nil means time.Now.
	Now func() time.Time
	// NodeRegistrationSecret names the Secret that records node's
	// registration (orch's node password secret): a node's client
	// certificates are accepted only while it exists (CheckCertificate).
	// Nil accepts every node certificate the CA signed.
	NodeRegistrationSecret func(node string) (namespace, name string)
	// KubeletClient reaches kubelets for pods/log, exec, attach,
	// portforward and nodes/proxy, and for the usage metrics.k8s.io serves;
	// nil answers the former with 501 and leaves metrics.k8s.io out.
	KubeletClient *KubeletClientConfig
	// Aggregation is what proxying to extension API servers needs (the
	// front proxy's certificate and CAs, published in kube-system's
	// extension-apiserver-authentication ConfigMap); nil proxies without a
	// client certificate and publishes nothing.
	Aggregation *AggregationConfig
	// Profiling serves Go's runtime profiles under /debug/pprof/ to users
	// allowed the non-resource URL (cluster-admin), as upstream's
	// --profiling, which is on by default there too.
	Profiling bool
	// EnableAdmissionPlugins and DisableAdmissionPlugins change which
	// admission plugins run (upstream's names; see AdmissionPlugins).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// Encryption gives the transformer that encrypts a resource at rest,
	// or nil for a resource stored as it is; nil encrypts nothing. It is
	// asked once per resource, when the resource is first served.
	Encryption func(schema.GroupResource) storage.Transformer
	// PodSecurityConfigFile holds PodSecurity's cluster defaults and
	// exemptions (LoadPodSecurityConfig), and may hold an
	// AdmissionConfiguration with PodTolerationRestriction's configuration
	// too; empty is upstream's defaults.
	PodSecurityConfigFile string
}

// Server is the API handler. Start runs its watch caches; ServeHTTP serves.
type Server struct {
	cfg       Config
	log       *slog.Logger
	codecs    *codecs
	resources map[schema.GroupVersionResource]*resourceStore
	groups    []apiGroup // discovery order
	metrics   *metrics
	alloc     *allocator
	fields    *fieldManagers
	openapi   openAPIDocs
	tokens    *tokens // nil without a service account key
	virtual   map[schema.GroupVersionResource]*virtualResource
	scraper   *metricsScraper // nil without a kubelet client
	authz     *authorizers
	custom    *customResources
	agg       *aggregator
	// ext is the admission users add (policies, webhooks), set once
	// extReady is closed; extErr says why it is nil.
	ext      *extAdmission
	extErr   error
	extReady chan struct{}
	// plugins are the admission plugins that run; podSecurity is nil when
	// PodSecurity does not.
	plugins     pluginSet
	podSecurity *psadmission.Admission
	// tolerations is PodTolerationRestriction's cluster configuration, nil
	// when the plugin is off.
	tolerations *tolerationConfig

	mu      sync.Mutex
	started bool
	// authzSynced is closed once the authorizers have what the caches held
	// at start.
	authzSynced chan struct{}
}

// apiGroup is one group version and its resources, in discovery order.
type apiGroup struct {
	gv        schema.GroupVersion
	resources []*resourceStore
	virtual   []*virtualResource
	// remote is set for a group version an extension server serves
	// (aggregation); its discovery is nil until it has answered.
	remote    bool
	discovery *apidiscoveryv2.APIVersionDiscovery
}

// New builds the server over cfg.Storage.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Log, codecs: newCodecs(newScheme()),
		resources: map[schema.GroupVersionResource]*resourceStore{}, metrics: newMetrics(),
		authz: newAuthorizers(), authzSynced: make(chan struct{}), extReady: make(chan struct{})}
	var err error
	if s.alloc, err = newAllocator(cfg.Storage, cfg.ServiceCIDRs); err != nil {
		return nil, err
	}
	if s.plugins, err = AdmissionPlugins(cfg.EnableAdmissionPlugins, cfg.DisableAdmissionPlugins); err != nil {
		return nil, err
	}
	if s.plugins.on(pluginPodSecurity) {
		psConfig, err := LoadPodSecurityConfig(cfg.PodSecurityConfigFile)
		if err != nil {
			return nil, fmt.Errorf("pod security admission configuration: %w", err)
		}
		if s.podSecurity, err = s.newPodSecurity(psConfig); err != nil {
			return nil, err
		}
	}
	if s.plugins.on(pluginPodTolerationRestriction) {
		if s.tolerations, err = loadTolerationConfig(cfg.PodSecurityConfigFile); err != nil {
			return nil, err
		}
	}
	s.agg = newAggregator(s, cfg.Aggregation)
	s.custom = newCustomResources(s.backendFor, s.codecs, s.log, s.builtinOpenAPI, s.webhookConverter)
	defaults := defaulter{byKind: map[schema.GroupVersionKind]func(runtime.Object){}}
	for _, res := range cfg.Resources {
		if err := s.addResource(res); err != nil {
			return nil, err
		}
		if res.Default != nil {
			defaults.byKind[res.GroupVersion.WithKind(res.Kind)] = res.Default
		}
	}
	s.fields = newFieldManagers(s.codecs.scheme, defaults)
	s.addVirtualResources()
	if cfg.ServiceAccountKey != nil {
		if s.tokens, err = newTokens(s, cfg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// backendFor is the store of resource gr: the cluster's, through gr's
// encryption at rest when it has one.
func (s *Server) backendFor(gr schema.GroupResource) storage.Interface {
	if s.cfg.Encryption != nil {
		if t := s.cfg.Encryption(gr); t != nil {
			return storage.Transformed(s.cfg.Storage, t)
		}
	}
	return s.cfg.Storage
}

func (s *Server) addResource(res registry.Resource) error {
	gvr := res.GroupVersion.WithResource(res.Resource)
	if _, dup := s.resources[gvr]; dup {
		return fmt.Errorf("resource %s registered twice", gvr)
	}
	prefix, stored := "/registry/"+res.Resource+"/", gvr.GroupResource()
	if res.StoredAs != nil {
		prefix, stored = "/registry/"+res.StoredAs.Resource+"/", res.StoredAs.GroupVersion.WithResource(res.StoredAs.Resource).GroupResource()
	}
	rs := &resourceStore{
		res: res, gvk: res.GroupVersion.WithKind(res.Kind), gr: gvr.GroupResource(),
		prefix: prefix, store: s.backendFor(stored), codecs: s.codecs,
	}
	rs.cache = storage.NewCache(rs.store, prefix, rs.decodeAny, 1000, s.log.With("cache", gvr.GroupResource().String()))
	s.resources[gvr] = rs
	for i := range s.groups {
		if s.groups[i].gv == res.GroupVersion {
			s.groups[i].resources = append(s.groups[i].resources, rs)
			return nil
		}
	}
	s.groups = append(s.groups, apiGroup{gv: res.GroupVersion, resources: []*resourceStore{rs}})
	return nil
}

// AuthorizersSynced is closed once the Node and RBAC authorizers hold what
// the watch caches held at start: before it, only system:masters is
// authorized (/readyz's informer-sync check waits for it too).
func (s *Server) AuthorizersSynced() <-chan struct{} { return s.authzSynced }

// apfBootstrapInterval is how often the API priority and fairness
// bootstrap configuration is checked again (upstream's producer also
// re-checks periodically).
const apfBootstrapInterval = time.Minute

// Start runs the watch caches, and the authorizers' feeds from them, until
// ctx ends.
func (s *Server) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, rs := range s.resources {
		wg.Add(1)
		go func() { defer wg.Done(); rs.cache.Start(ctx) }()
	}
	var synced []chan struct{}
	for gvr, to := range s.authorizerFeeds() {
		rs, ok := s.resources[gvr]
		if !ok {
			continue
		}
		done := make(chan struct{})
		synced = append(synced, done)
		wg.Add(1)
		go func() { defer wg.Done(); feed(ctx, rs, to, done) }()
	}
	if crds, ok := s.resources[crdResource]; ok {
		s.custom.start(ctx)
		wg.Add(1)
		go func() { defer wg.Done(); feed(ctx, crds, s.custom, make(chan struct{})) }()
	}
	if apiServices, ok := s.resources[apiServiceResource]; ok {
		wg.Add(3)
		go func() { defer wg.Done(); feed(ctx, apiServices, s.agg, make(chan struct{})) }()
		go func() {
			defer wg.Done()
			if err := s.agg.runAvailability(ctx); err != nil {
				s.log.Error("APIService availability checks stopped", "err", err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := s.runAutoRegister(ctx); err != nil {
				s.log.Error("the APIServices of the served group versions are not kept", "err", err)
			}
		}()
		if s.cfg.Aggregation != nil {
			wg.Add(1)
			go func() { defer wg.Done(); s.publishAuthenticationInfo(ctx, s.cfg.Aggregation) }()
		}
	}
	if s.serves(flowcontrolv1.SchemeGroupVersion) {
		if client, err := kubernetes.NewForConfig(s.loopbackConfig()); err != nil {
			s.log.Error("the API priority and fairness configuration is not kept", "err", err)
		} else {
			wg.Add(1)
			go func() { defer wg.Done(); apfbootstrap.Run(ctx, client, apfBootstrapInterval, s.log) }()
		}
	}
	if err := s.startExtAdmission(ctx); err != nil {
		s.log.Error("admission policies and webhooks cannot run: every write is refused", "err", err)
	}
	go func() {
		for _, c := range synced {
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
		close(s.authzSynced)
	}()
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	wg.Wait()
	return nil
}

// ServeHTTP authorizes and routes a request that has passed
// authentication.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, isResource, err := parseResourcePath(r)
	if err != nil {
		s.respondError(w, r, badRequest("%v", err), schema.GroupResource{}, "")
		return
	}
	user, ok := filters.UserFrom(r.Context())
	if !ok {
		user = authz.User{Name: authz.Anonymous, Groups: []string{authz.UnauthenticatedGroup}}
	}
	if acting, impersonated, err := s.impersonate(r.Context(), r, user); err != nil {
		s.respondError(w, r, err, schema.GroupResource{}, "")
		return
	} else if impersonated {
		user = acting
		r = r.WithContext(filters.WithUser(r.Context(), user))
		auditImpersonation(r.Context(), user)
	}
	if !s.authorize(w, r, requestAttributes(r, user, info, isResource)) {
		return
	}
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/livez" || path == "/readyz" ||
		strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/"):
		s.serveHealth(w, r)
	case path == "/version" || path == "/version/":
		s.serveVersion(w, r)
	case path == "/metrics":
		s.metrics.serve(w, r)
	case s.cfg.Profiling && strings.HasPrefix(path, "/debug/pprof"):
		serveProfile(w, r)
	case strings.HasPrefix(path, "/openapi/"):
		s.serveOpenAPI(w, r)
	case path == satoken.OpenIDConfigPath || path == satoken.JWKSPath:
		s.serveIssuerDiscovery(w, r)
	default:
		if r.Method != http.MethodGet {
			// Admission (policies, webhooks) warns through the context.
			r = r.WithContext(warning.WithWarningRecorder(r.Context(), headerWarnings{w}))
		}
		s.serveAPI(w, r, info, isResource)
	}
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, info requestInfo, isResource bool) {
	if svc, ok := s.agg.remoteFor(r.URL.Path); ok {
		s.agg.proxy(w, r, svc)
		return
	}
	if !isResource {
		if !s.serveDiscovery(w, r) {
			s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		}
		return
	}
	if v, ok := s.virtual[info.GroupVersion.WithResource(info.Resource)]; ok {
		s.serveVirtual(w, r, info, v)
		return
	}
	rs, ok := s.resources[info.GroupVersion.WithResource(info.Resource)]
	if !ok {
		if rs, crd, ok := s.custom.lookup(info.GroupVersion.WithResource(info.Resource)); ok {
			s.serveCustom(w, r, info, rs, crd)
			return
		}
		if s.serveDiscovery(w, r) {
			return
		}
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	s.metrics.observe(info, rs, w, r, func(w http.ResponseWriter) { s.serveResource(w, r, info, rs) })
}
