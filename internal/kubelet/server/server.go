package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"orch/internal/kubelet/metrics"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultPort is the kubelet's port.
const DefaultPort = 10250

// ErrNotFound is wrapped by a ContainerFinder when the pod, container or
// sandbox does not exist on this node (the server answers 404).
var ErrNotFound = errors.New("not found")

// ContainerFinder maps the API's names to the runtime's IDs.
type ContainerFinder interface {
	// FindContainer returns the ID of the container's current attempt, or
	// of the one before it when previous is set. Errors are shown to
	// users as they are (e.g. `container "app" in pod "web" is waiting to
	// start: ContainerCreating`); wrap ErrNotFound for a 404.
	FindContainer(ctx context.Context, namespace, pod, container string, previous bool) (string, error)
	// FindSandbox returns the ID of the pod's ready sandbox.
	FindSandbox(ctx context.Context, namespace, pod string) (string, error)
}

// Streamer prepares streaming sessions in the runtime (internal/kubelet/cri.Runtime is one).
type Streamer interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// StatsSource gives the runtime's resource usage.
type StatsSource interface {
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// Runtime is what the server asks the container runtime; *cri.Runtime and
// *cri.Fake implement it.
type Runtime interface {
	Streamer
	StatsSource
	containerStatuser
}

// Config is what the server needs from the agent.
type Config struct {
	// Addr is the address to listen on; empty means ":10250".
	Addr string
	// TLS serves the node's serving certificate and verifies client
	// certificates against the cluster CA (join.Credentials.ServingTLSConfig).
	TLS *tls.Config
	// TokenReviews checks bearer tokens (a clientset's
	// AuthenticationV1().TokenReviews()); nil refuses them.
	TokenReviews TokenReviewer
	// SubjectAccessReviews authorizes every authenticated request (a
	// clientset's AuthorizationV1().SubjectAccessReviews(), which the
	// node's identity may create); nil refuses every request with 403.
	SubjectAccessReviews SubjectAccessReviewer
	// Runtime is the CRI runtime.
	Runtime Runtime
	// Containers finds containers and sandboxes; NewCRIFinder is one.
	Containers ContainerFinder
	// Pods returns the pods bound to this node (for /pods, and to check
	// that a pod and container exist). Nil means no check and an empty list.
	Pods func() []*corev1.Pod
	// NodeName names the node in /stats/summary and in the
	// SubjectAccessReviews (nodes/NAME).
	NodeName string
	// RootDir is the file system /stats/summary reports for the node
	// (the agent's data dir); empty means "/".
	RootDir string
	// Metrics is served at /metrics and /metrics/probes; nil serves
	// empty ones. /metrics/resource and /metrics/cadvisor come from the
	// stats summary.
	Metrics *metrics.Kubelet
	// Log is the server's logger; nil discards.
	Log *slog.Logger
}

// Server is the kubelet API. Start serves it until its context ends.
type Server struct {
	cfg     Config
	log     *slog.Logger
	auth    *authenticator
	authz   *authorizer
	handler http.Handler
	stats   *statsCollector
	// checkPods is whether cfg.Pods was given to check pods against.
	checkPods bool
}

// New checks cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Runtime == nil || cfg.Containers == nil {
		return nil, errors.New("kubelet server: a runtime and a container finder are required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("kubelet server: a node name is required (requests are authorized as nodes/NAME)")
	}
	if cfg.Addr == "" {
		cfg.Addr = ":" + strconv.Itoa(DefaultPort)
	}
	if cfg.RootDir == "" {
		cfg.RootDir = "/"
	}
	checkPods := cfg.Pods != nil
	if !checkPods {
		cfg.Pods = func() []*corev1.Pod { return nil }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New(cfg.NodeName)
	}
	if cfg.SubjectAccessReviews == nil {
		cfg.Log.Warn("the kubelet API has no SubjectAccessReview client and will refuse every request")
	}
	s := &Server{cfg: cfg, log: cfg.Log, checkPods: checkPods,
		auth:  newAuthenticator(cfg.TokenReviews, time.Now),
		authz: newAuthorizer(cfg.SubjectAccessReviews, cfg.NodeName, time.Now, cfg.Log),
	}
	s.stats = newStatsCollector(cfg.Runtime, cfg.NodeName, cfg.RootDir, cfg.Pods, time.Now)
	s.handler = s.auth.wrap(s.authz.wrap(s.routes()))
	return s, nil
}

// Handler is the authenticated and authorized API, for tests and for callers that serve
// it themselves. The request's TLS state must carry verified client
// certificates for certificate authentication.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on cfg.Addr with TLS and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if s.cfg.TLS == nil {
		return errors.New("kubelet server: no TLS configuration (the node's serving certificate)")
	}
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("kubelet server: listen on %s (is another kubelet running? choose another port): %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, l)
}

// Serve serves on l (wrapped in TLS) until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	tlsConfig := s.cfg.TLS.Clone()
	tlsConfig.NextProtos = []string{"h2", "http/1.1"}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second, // as upstream's servers
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(tls.NewListener(l, tlsConfig)) }()
	s.log.Info("kubelet API listening", "addr", l.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("kubelet server: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		srv.Close()
		<-errc
		return nil
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("GET /pods", s.servePods)
	mux.HandleFunc("GET /pods/", s.servePods)
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.serveContainerLogs)
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{uid}/{container}", s.serveExec)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{uid}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}", s.servePortForward)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}/{uid}", s.servePortForward)
	}
	mux.HandleFunc("GET /stats/summary", s.serveSummary)
	mux.HandleFunc("GET /stats/summary/", s.serveSummary)
	mux.Handle("GET /metrics", s.cfg.Metrics.Handler())
	mux.Handle("GET /metrics/probes", s.cfg.Metrics.ProbesHandler())
	mux.Handle("GET /metrics/resource", metrics.Handler(resourceMetrics(s.stats)))
	mux.Handle("GET /metrics/cadvisor", metrics.Handler(cadvisorMetrics(s.stats)))
	return mux
}

// findPod returns the pod from cfg.Pods; ok is true (and the pod nil) when
// there is no list to check against.
func (s *Server) findPod(namespace, name string) (*corev1.Pod, bool) {
	if !s.checkPods {
		return nil, true
	}
	for _, p := range s.cfg.Pods() {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
