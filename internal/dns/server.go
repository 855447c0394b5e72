package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Defaults of Config.
const (
	DefaultResolvConf = "/etc/resolv.conf"
	DefaultTTL        = 5
	DefaultCacheSize  = 10000
)

// queryTimeout bounds the work done for one query, forwarding included.
const queryTimeout = 5 * time.Second

// Config configures a Server. Zero values take the defaults.
type Config struct {
	Domain      string   // cluster domain, e.g. "cluster.local"
	Listen      []string // host:port served over UDP and TCP; bound with IP_FREEBIND; port 0 picks one (see Addrs)
	MetricsAddr string   // host:port for GET /metrics (Prometheus text format); "" = none
	ResolvConf  string   // upstream resolvers for names outside the zone (DefaultResolvConf); re-read when it changes
	TTL         uint32   // of cluster answers (DefaultTTL)

	// Upstreams, host:port, replace the nameservers of ResolvConf when set.
	Upstreams []string
	// CacheSize bounds the forwarded answers kept (DefaultCacheSize).
	CacheSize int
	// UpstreamTimeout bounds one exchange with one upstream (2s).
	UpstreamTimeout time.Duration
}

// Server answers DNS for the cluster zone from informer caches and
// forwards other names to upstream resolvers. Create it with New.
type Server struct {
	cfg     Config
	log     *slog.Logger
	factory informers.SharedInformerFactory
	svcs    cache.SharedIndexInformer
	slices  cache.SharedIndexInformer
	zone    *zone
	fwd     *forwarder
	metrics *metrics

	synced  atomic.Bool
	started atomic.Bool
	ready   chan struct{}
	ctx     atomic.Pointer[context.Context] // Start's, for queries

	mu          sync.Mutex
	addrs       []string
	metricsAddr string
}

// New returns a Server for cfg that watches Services and EndpointSlices
// through client. Nothing runs until Start.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Server, error) {
	if client == nil {
		return nil, errors.New("dns: New needs a Kubernetes client")
	}
	origin := dns.CanonicalName(strings.TrimSpace(cfg.Domain))
	if _, ok := dns.IsDomainName(origin); !ok || origin == "." {
		return nil, fmt.Errorf("dns: cluster domain %q is not a domain name (set Config.Domain, e.g. cluster.local)", cfg.Domain)
	}
	if len(cfg.Listen) == 0 {
		return nil, errors.New("dns: Config.Listen is empty (give host:port to serve on, e.g. 10.42.0.1:53)")
	}
	for _, a := range append(append([]string{}, cfg.Listen...), cfg.Upstreams...) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("dns: address %q is not host:port (e.g. 10.42.0.1:53): %w", a, err)
		}
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = DefaultResolvConf
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = 2 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "dns")

	s := &Server{cfg: cfg, log: log, ready: make(chan struct{})}
	s.metrics = newMetrics()
	s.factory = informers.NewSharedInformerFactory(client, 0)
	s.svcs = s.factory.Core().V1().Services().Informer()
	s.slices = s.factory.Discovery().V1().EndpointSlices().Informer()
	if err := addIndexers(s.svcs, s.slices); err != nil {
		return nil, fmt.Errorf("dns: %w", err)
	}
	s.zone = newZone(origin, cfg.TTL, s.svcs.GetIndexer(), s.slices.GetIndexer())
	onChange := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.zone.touch() },
		UpdateFunc: func(any, any) { s.zone.touch() },
		DeleteFunc: func(any) { s.zone.touch() },
	}
	for _, inf := range []cache.SharedIndexInformer{s.svcs, s.slices} {
		if _, err := inf.AddEventHandler(onChange); err != nil {
			return nil, fmt.Errorf("dns: watch: %w", err)
		}
	}
	s.fwd = newForwarder(cfg, s.metrics, log)
	s.metrics.cacheEntries(s.fwd.cache.len)
	return s, nil
}

// Ready is closed once the informers have synced and the listeners are up.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addrs are the bound DNS addresses (UDP and TCP share each), valid after
// Ready; they differ from Config.Listen where that asked for port 0.
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.addrs...)
}

// MetricsListenAddr is the bound metrics address, valid after Ready; ""
// when Config.MetricsAddr is empty.
func (s *Server) MetricsListenAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metricsAddr
}

// Start serves until ctx ends. It serves forwarded names at once; names of
// the cluster zone get SERVFAIL (so clients retry rather than cache a
// wrong NXDOMAIN) until the informers have synced.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("dns: Server.Start called twice (create another Server with New)")
	}
	if ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx.Store(&ctx)

	pairs, err := listenAll(ctx, s.cfg.Listen)
	if err != nil {
		return err
	}
	var ml net.Listener
	if s.cfg.MetricsAddr != "" {
		if ml, err = (&net.ListenConfig{Control: freebind}).Listen(ctx, "tcp", s.cfg.MetricsAddr); err != nil {
			for _, p := range pairs {
				p.close()
			}
			return fmt.Errorf("dns: listen for metrics on %s (set another MetricsAddr or \"\" for none): %w", s.cfg.MetricsAddr, err)
		}
	}

	errc := make(chan error, 2*len(pairs)+1)
	servers := s.serveDNS(pairs, errc)
	var hs *http.Server
	if ml != nil {
		hs = s.serveMetrics(ml, errc)
	}
	var addrs []string
	for _, p := range pairs {
		addrs = append(addrs, p.addr())
	}
	s.mu.Lock()
	s.addrs = addrs
	if ml != nil {
		s.metricsAddr = ml.Addr().String()
	}
	s.mu.Unlock()
	s.log.Info("serving DNS", "zone", s.zone.origin, "listen", addrs, "upstreams", s.fwd.upstreams())

	s.factory.StartWithContext(ctx)
	go func() {
		for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				s.log.Debug("informer not synced", "type", typ)
				return
			}
		}
		s.synced.Store(true)
		close(s.ready)
		s.log.Info("DNS ready: informers synced")
	}()

	select {
	case <-ctx.Done():
	case err = <-errc:
		s.log.Error("DNS server failed", "err", err)
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	for _, srv := range servers {
		_ = srv.ShutdownContext(shutdownCtx)
	}
	for _, p := range pairs {
		p.close()
	}
	if hs != nil {
		_ = hs.Shutdown(shutdownCtx)
	}
	s.factory.Shutdown()
	return err
}

// serveDNS serves each listener pair over UDP and TCP and returns once all
// serve; errors while serving go to errc.
func (s *Server) serveDNS(pairs []listenPair, errc chan<- error) []*dns.Server {
	var servers []*dns.Server
	var up sync.WaitGroup
	for _, p := range pairs {
		for _, srv := range []*dns.Server{
			{PacketConn: p.udp, Handler: s, UDPSize: dns.DefaultMsgSize},
			{Listener: p.tcp, Handler: s, ReadTimeout: 10 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }},
		} {
			servers = append(servers, srv)
			up.Add(1)
			var once sync.Once
			srv.NotifyStartedFunc = func() { once.Do(up.Done) }
			go func() {
				if err := srv.ActivateAndServe(); err != nil {
					errc <- fmt.Errorf("dns: serve: %w", err)
				}
				once.Do(up.Done) // if it never started
			}()
		}
	}
	up.Wait()
	return servers
}

// serveMetrics serves /metrics and /ready on l.
func (s *Server) serveMetrics(l net.Listener, errc chan<- error) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.synced.Load() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("OK\n"))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("dns: metrics: %w", err)
		}
	}()
	return hs
}

// baseContext is Start's context, or Background before Start.
func (s *Server) baseContext() context.Context {
	if p := s.ctx.Load(); p != nil {
		return *p
	}
	return context.Background()
}
