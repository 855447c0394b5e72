package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"orch/internal/gateway"
	"orch/internal/routing"
	"orch/internal/worker"
)

// Config configures a Server.
type Config struct {
	HTTPPort  int // the Ingresses' plain HTTP port, e.g. 80; 0 serves none
	HTTPSPort int // the Ingresses' TLS port, e.g. 443; 0 serves none
}

// Server is the built-in Ingress and Gateway controller of one node: it
// follows the Ingresses of the orch IngressClass and, once Gateway API's
// definitions are served, the Gateways of orch's GatewayClasses and their
// HTTPRoutes, with their Services' EndpointSlices and their TLS Secrets,
// and serves them on the node's ports: the Ingress ports once an
// IngressClass of Controller exists (`orch server --disable ingress`
// leaves it out, and then nothing listens there), and each Gateway
// listener's port.
type Server struct {
	cfg      Config
	client   kubernetes.Interface
	gwClient gwclient.Interface // nil: no Gateway API
	log      *slog.Logger
	proxy    *Proxy
	certs    atomic.Pointer[map[int]*Certs] // by port
	fallback *tls.Certificate
	servers  map[int]*http.Server // listening ones, by port
	gateway  atomic.Pointer[gatewayAPI]
}

// New makes a Server; gw (may be nil) is the Gateway API client, m (may
// be nil) receives its metrics.
func New(cfg Config, client kubernetes.Interface, gw gwclient.Interface, m *Metrics, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "ingress")
	fallback, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("ingress: default certificate: %w", err)
	}
	s := &Server{cfg: cfg, client: client, gwClient: gw, log: log, proxy: NewProxy(m, log), fallback: fallback, servers: map[int]*http.Server{}}
	s.certs.Store(&map[int]*Certs{})
	return s, nil
}

// Start follows the API and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(s.client, 0)
	// Only TLS Secrets: the rest of the cluster's Secrets stay out of
	// this process.
	fs := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "type=" + string(v1.SecretTypeTLS)
	}))
	ings := f.Networking().V1().Ingresses()
	classes := f.Networking().V1().IngressClasses()
	svcs := f.Core().V1().Services()
	slices := f.Discovery().V1().EndpointSlices()
	secrets := fs.Core().V1().Secrets()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "ingress"})
	defer queue.ShutDown()
	const key = "routes"
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { queue.Add(key) },
		UpdateFunc: func(any, any) { queue.Add(key) },
		DeleteFunc: func(any) { queue.Add(key) },
	}
	infs := []cache.SharedIndexInformer{ings.Informer(), classes.Informer(), svcs.Informer(), slices.Informer(), secrets.Informer()}
	var synced []cache.InformerSynced
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("ingress: watch: %w", err)
		}
		synced = append(synced, inf.HasSynced)
	}
	f.StartWithContext(ctx)
	fs.StartWithContext(ctx)
	defer f.Shutdown()
	defer fs.Shutdown()
	defer s.shutdown()
	if s.gwClient != nil {
		go func() {
			if g := followGatewayAPI(ctx, s.client, s.gwClient, h, s.log); g != nil {
				s.gateway.Store(g)
				queue.Add(key)
			}
		}()
	}
	queue.Add(key)
	return worker.Run(ctx, queue, func(context.Context, string) (worker.Result, error) {
		in := Input{}
		in.Ingresses, _ = ings.Lister().List(labels.Everything())
		in.Classes, _ = classes.Lister().List(labels.Everything())
		in.Services, _ = svcs.Lister().List(labels.Everything())
		in.Slices, _ = slices.Lister().List(labels.Everything())
		list, _ := secrets.Lister().List(labels.Everything())
		byKey := map[string]*v1.Secret{}
		for _, sec := range list {
			byKey[sec.Namespace+"/"+sec.Name] = sec
		}
		var gw *gateway.Result
		if g := s.gateway.Load(); g != nil {
			gw = gateway.Build(g.input(byKey, routing.NewServices(in.Services, in.Slices)))
		}
		plans, errs := plan(s.cfg, Build(in), classExists(in), gw)
		tables := map[int]*routing.Table{}
		certs := map[int]*Certs{}
		for port, p := range plans {
			tables[port] = routing.NewTable(p.rules, p.fallback).WithoutFallbackFor(p.gatewayHosts)
			if p.tls {
				c, cerrs := s.loadCerts(p.certs, byKey)
				certs[port] = c
				errs = append(errs, cerrs...)
			}
		}
		for _, err := range errs {
			s.log.Warn("not served as asked", "err", err)
		}
		s.proxy.SetTables(tables)
		s.certs.Store(&certs)
		if err := s.listen(plans); err != nil {
			return worker.Result{}, err // retried with back-off
		}
		return worker.Result{}, nil
	}, worker.Options{Log: s.log, Synced: synced})
}

// loadCerts loads a port's certificates; the "" host's is the port's
// default, else the self-signed one.
func (s *Server) loadCerts(hosts map[string]string, secrets map[string]*v1.Secret) (*Certs, []error) {
	fallback := s.fallback
	var errs []error
	if key, ok := hosts[""]; ok {
		c, cerrs := LoadCerts(map[string]string{"": key}, secrets, nil)
		if cert := c.byHost[""]; cert != nil {
			fallback = cert
		}
		errs = cerrs
		hosts = maps.Clone(hosts)
		delete(hosts, "")
	}
	c, cerrs := LoadCerts(hosts, secrets, fallback)
	return c, append(errs, cerrs...)
}

func classExists(in Input) bool {
	for _, c := range in.Classes {
		if c.Spec.Controller == Controller {
			return true
		}
	}
	return false
}

// listen starts listening on the planned ports not listened on yet, and
// stops listening on the others.
func (s *Server) listen(plans map[int]*portPlan) error {
	for port, srv := range s.servers {
		if p := plans[port]; p == nil || p.tls != (srv.TLSConfig != nil) {
			srv.Close()
			delete(s.servers, port)
			s.log.Info("stopped serving", "port", port)
		}
	}
	var errs []error
	for port, p := range plans {
		if s.servers[port] != nil {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			errs = append(errs, fmt.Errorf("ingress: listen on port %d (another program has the port? for the Ingress ports set --ingress-http-port/--ingress-https-port): %w", port, err))
			continue
		}
		srv := &http.Server{Handler: s.proxy, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
		if p.tls {
			srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				c := (*s.certs.Load())[port]
				if c == nil {
					return s.fallback, nil
				}
				return c.Get(h)
			}}
			go srv.ServeTLS(ln, "", "") // HTTP/2 by ALPN, and HTTP/1.1
		} else {
			go srv.Serve(ln)
		}
		s.servers[port] = srv
		s.log.Info("serving Ingresses and Gateways", "address", ln.Addr().String(), "tls", p.tls)
	}
	return errors.Join(errs...)
}

func (s *Server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		srv.Shutdown(ctx)
	}
}
