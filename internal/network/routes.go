package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"orch/internal/cidr"
	"orch/internal/worker"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Backends of RouteConfig.Backend.
const (
	BackendVXLAN  = "vxlan"
	BackendHostGW = "host-gw"
	BackendNone   = "none"
)

// Defaults of RouteConfig and names the Router uses on the host.
const (
	DefaultVXLANPort   = 8472 // flannel's and k3s's
	DefaultVNI         = 1
	DefaultRouteResync = 5 * time.Minute
	// VXLANDevice is the VXLAN device of the vxlan backend.
	VXLANDevice = "orch.vxlan"
	// RouteProtocol is the rtnetlink protocol number of orch's routes
	// (not one of iproute2's names, nor Calico's 80).
	RouteProtocol = 123
	// vxlanOverhead is what VXLAN over IPv4 adds to a frame: outer IPv4
	// (20), UDP (8), VXLAN (8) and the inner Ethernet header (14).
	vxlanOverhead = 50
)

// RouteConfig says which node the Router runs on and how it reaches the
// others. Zero values take the defaults.
type RouteConfig struct {
	NodeName    string
	NodeIP      net.IP // the address other nodes reach this node on (the Node's InternalIP)
	Backend     string // BackendVXLAN when empty
	ClusterCIDR string // e.g. 10.42.0.0/16, or 10.42.0.0/16,fd00:42::/56 (dual stack)
	VXLANPort   int    // DefaultVXLANPort when zero
	VNI         int    // DefaultVNI when zero
	// Resync is how often the host is checked (and put back) when no Node
	// changes (DefaultRouteResync when zero).
	Resync time.Duration
}

// MTUOverhead is how much the backend's encapsulation takes from the
// MTU: pods' interfaces must be that much below the node's. "" is the
// default backend, vxlan.
func MTUOverhead(backend string) int {
	if backend == BackendVXLAN || backend == "" {
		return vxlanOverhead
	}
	return 0
}

// dataplane makes the host match a plan (hostDataplane; a fake in tests).
type dataplane interface {
	apply(p routePlan) error
}

// Router keeps the routes to the other nodes' pods and the host's
// forwarding and masquerade rules in step with the Nodes.
type Router struct {
	cfg      RouteConfig
	clusters []*net.IPNet // one per family
	client   kubernetes.Interface
	log      *slog.Logger
	dp       dataplane
	warned   map[string]bool // warnings of the last sync; only the sync loop uses it

	readyOnce sync.Once
	ready     chan struct{}
}

// NewRouter checks cfg, fills in its defaults and returns a Router; log
// nil means slog.Default().
func NewRouter(cfg RouteConfig, client kubernetes.Interface, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Backend == "" {
		cfg.Backend = BackendVXLAN
	}
	if cfg.VXLANPort == 0 {
		cfg.VXLANPort = DefaultVXLANPort
	}
	if cfg.VNI == 0 {
		cfg.VNI = DefaultVNI
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultRouteResync
	}
	r := &Router{client: client, ready: make(chan struct{}), warned: map[string]bool{},
		log: log.With("component", "routes", "node", cfg.NodeName, "backend", cfg.Backend)}
	switch cfg.Backend {
	case BackendNone:
		r.cfg = cfg
		return r, nil
	case BackendVXLAN, BackendHostGW:
	default:
		return nil, fmt.Errorf("network: unknown backend %q; use %q, %q or %q", cfg.Backend, BackendVXLAN, BackendHostGW, BackendNone)
	}
	if cfg.NodeName == "" {
		return nil, errors.New("network: the router needs the node's name (--node-name)")
	}
	if cfg.NodeIP.To4() == nil {
		return nil, fmt.Errorf("network: the %s backend needs an IPv4 node IP, got %q; set --node-ip to the IPv4 address other nodes reach this one on", cfg.Backend, cfg.NodeIP)
	}
	cfg.NodeIP = cfg.NodeIP.To4()
	clusters, err := cidr.ParseNets("--cluster-cidr", cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if cfg.VXLANPort < 1 || cfg.VXLANPort > 65535 {
		return nil, fmt.Errorf("network: VXLAN port %d is out of range (1 to 65535; flannel and k3s use %d)", cfg.VXLANPort, DefaultVXLANPort)
	}
	if cfg.VNI < 0 || cfg.VNI >= 1<<24 {
		return nil, fmt.Errorf("network: VNI %d is out of range (1 to 16777215)", cfg.VNI)
	}
	r.cfg, r.clusters = cfg, clusters
	r.dp = newHostDataplane(cfg, clusters, r.log)
	return r, nil
}

// Ready is closed after the first successful sync: routes to the nodes
// known then are in place (at once with BackendNone).
func (r *Router) Ready() <-chan struct{} { return r.ready }

func (r *Router) markReady() { r.readyOnce.Do(func() { close(r.ready) }) }

// Start watches the Nodes and keeps the host in step until ctx ends, and
// returns nil then. Everything it changes on the host it changes from the
// goroutine that called Start (which matters to callers that run it in
// another network namespace).
func (r *Router) Start(ctx context.Context) error {
	if r.cfg.Backend == BackendNone {
		r.log.Info("backend none: orch programs no routes between nodes, no sysctls and no iptables rules")
		r.markReady()
		<-ctx.Done()
		return nil
	}
	factory := informers.NewSharedInformerFactory(r.client, 0)
	nodes := factory.Core().V1().Nodes()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "routes"})
	defer queue.ShutDown()
	const key = "nodes"
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { queue.Add(key) },
		UpdateFunc: func(old, cur any) {
			// Node status changes every few seconds; only the podCIDR and
			// the addresses matter here.
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || routeKeyOf(o) != routeKeyOf(n) {
				queue.Add(key)
			}
		},
		DeleteFunc: func(any) { queue.Add(key) },
	}); err != nil {
		return err
	}
	lister := nodes.Lister()
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return nil // ctx ended
	}
	queue.Add(key) // even with no Node yet: host settings and iptables
	// On this goroutine: the caller may have locked it into a network
	// namespace.
	return worker.Run(ctx, queue, func(context.Context, string) (worker.Result, error) {
		if err := r.sync(lister); err != nil {
			return worker.Result{}, fmt.Errorf("syncing the routes between nodes: %w", err)
		}
		return worker.Result{After: r.cfg.Resync}, nil
	}, worker.Options{OnCaller: true, Log: r.log})
}

// sync makes the host match the Nodes in the lister.
func (r *Router) sync(lister corelisters.NodeLister) error {
	list, err := lister.List(labels.Everything())
	if err != nil {
		return err
	}
	plan, warnings := planRoutes(r.cfg, r.clusters, list)
	seen := map[string]bool{}
	for _, w := range warnings {
		seen[w] = true
		if !r.warned[w] {
			r.log.Warn(w)
		}
	}
	r.warned = seen
	if err := r.dp.apply(plan); err != nil {
		return err
	}
	r.markReady()
	return nil
}

// routeKeyOf is what of a Node the routes depend on.
func routeKeyOf(n *corev1.Node) string {
	return fmt.Sprint(n.Spec.PodCIDR, n.Spec.PodCIDRs, n.Status.Addresses)
}
