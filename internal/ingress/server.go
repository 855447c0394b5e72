package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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

	"orch/internal/worker"
)

// Config configures a Server.
type Config struct {
	HTTPAddr  string // e.g. ":80"; "" serves no plain HTTP
	HTTPSAddr string // e.g. ":443"; "" serves no TLS
}

// Server is the built-in Ingress controller of one node: it follows the
// Ingresses of the orch IngressClass, their Services' EndpointSlices and
// their TLS Secrets, and serves them on the node's HTTP and HTTPS ports
// once an IngressClass of Controller exists (`orch server --disable
// ingress` leaves it out, and then nothing listens).
type Server struct {
	cfg      Config
	client   kubernetes.Interface
	log      *slog.Logger
	proxy    *Proxy
	certs    atomic.Pointer[Certs]
	fallback *tls.Certificate
	servers  []*http.Server // listening ones
}

// New makes a Server; m (may be nil) receives its metrics.
func New(cfg Config, client kubernetes.Interface, m *Metrics, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "ingress")
	fallback, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("ingress: default certificate: %w", err)
	}
	s := &Server{cfg: cfg, client: client, log: log, proxy: NewProxy(m, log), fallback: fallback}
	s.certs.Store(&Certs{fallback: fallback})
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
		t := Build(in)
		certs, errs := LoadCerts(t.TLS, byKey, s.fallback)
		for _, err := range errs {
			s.log.Warn("serving the default certificate instead", "err", err)
		}
		s.proxy.SetTable(t)
		s.certs.Store(certs)
		if !classExists(in) {
			return worker.Result{}, nil
		}
		if err := s.listen(); err != nil {
			return worker.Result{}, err // retried with back-off
		}
		return worker.Result{}, nil
	}, worker.Options{Log: s.log, Synced: synced})
}

func classExists(in Input) bool {
	for _, c := range in.Classes {
		if c.Spec.Controller == Controller {
			return true
		}
	}
	return false
}

// listen starts the listeners not started yet.
func (s *Server) listen() error {
	if len(s.servers) > 0 {
		return nil
	}
	var errs []error
	var started []*http.Server
	for _, l := range []struct {
		addr string
		tls  bool
	}{{s.cfg.HTTPAddr, false}, {s.cfg.HTTPSAddr, true}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("ingress: listen on %s (another program has the port? set --ingress-http-port/--ingress-https-port): %w", l.addr, err))
			continue
		}
		srv := &http.Server{Handler: s.proxy, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
		if l.tls {
			srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return s.certs.Load().Get(h)
			}}
			go srv.ServeTLS(ln, "", "") // HTTP/2 by ALPN, and HTTP/1.1
		} else {
			go srv.Serve(ln)
		}
		started = append(started, srv)
		s.log.Info("serving Ingresses", "address", ln.Addr().String(), "tls", l.tls)
	}
	if len(errs) > 0 {
		for _, srv := range started {
			srv.Close()
		}
		return errors.Join(errs...)
	}
	s.servers = started
	return nil
}

func (s *Server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		srv.Shutdown(ctx)
	}
}
