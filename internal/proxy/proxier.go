package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"orch/internal/iptsync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"
)

// Defaults, as kube-proxy's iptables mode.
const (
	DefaultMinSyncPeriod  = time.Second
	DefaultSyncPeriod     = 30 * time.Second
	DefaultFullSyncPeriod = time.Hour
)

// The proxy's modes (Config.Mode, --proxy-mode), as kube-proxy's.
const (
	ModeIPTables = "iptables"
	ModeNFTables = "nftables"
)

// modeSyncer writes the rules of one mode.
type modeSyncer interface {
	// sync writes the rules of in.
	sync(now time.Time, in Input) (syncResult, error)
	// periodic asks the next sync to check what other programs may have
	// removed (a SyncPeriod tick).
	periodic()
}

// Config configures a Proxier.
type Config struct {
	// Mode is ModeIPTables (the default) or ModeNFTables.
	Mode     string
	NodeName string
	NodeIPs  []net.IP // this node's addresses
	// ClusterCIDR is the pods' CIDR: traffic to a cluster IP from outside
	// it is masqueraded. Empty: no such masquerade (kube-proxy without
	// --cluster-cidr).
	ClusterCIDR string
	// MinSyncPeriod is the least time between two syncs; changes within it
	// are batched. The first change after a quiet time syncs at once.
	MinSyncPeriod time.Duration
	// SyncPeriod is how often the jump rules are checked even without a
	// change (a missing one makes that sync a full one); default 30s as
	// upstream.
	SyncPeriod time.Duration
	// FullSyncPeriod is how often every chain is rewritten and stale chains
	// are looked for; default 1h as upstream.
	FullSyncPeriod time.Duration
}

// Proxier is the service proxy of one node.
type Proxier struct {
	cfg    Config
	client kubernetes.Interface
	log    *slog.Logger
	s      modeSyncer
	health *healthServer

	kick      chan struct{}
	ready     chan struct{}
	readyOnce sync.Once
}

// New checks cfg and makes a Proxier. It fails when the mode's tools
// (iptables, or nft 1.0.1 or later) are missing.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Proxier, error) {
	switch cfg.Mode {
	case "", ModeIPTables:
		d, err := newIPTablesDriver()
		if err != nil {
			return nil, err
		}
		return newProxier(cfg, client, log, d, netlinkConntrack{})
	case ModeNFTables:
		nft, err := knftables.New(knftables.IPv4Family, nftTable)
		if err != nil {
			return nil, fmt.Errorf("proxy: --proxy-mode nftables needs nft 1.0.1 or later and a kernel with nf_tables (Debian: apt-get install nftables): %w", err)
		}
		p, err := newProxier(cfg, client, log, nil, netlinkConntrack{})
		if err != nil {
			return nil, err
		}
		p.s = &nftMode{s: newNFTSyncer(nft, p.cfg.FullSyncPeriod), udp: udpCleaner{ct: netlinkConntrack{}}}
		return p, nil
	}
	return nil, fmt.Errorf("proxy: unknown proxy mode %q (iptables or nftables)", cfg.Mode)
}

// newProxier makes a Proxier in iptables mode through w (nil: the
// caller sets the mode's syncer).
func newProxier(cfg Config, client kubernetes.Interface, log *slog.Logger, w iptsync.Writer, ct conntrackCleaner) (*Proxier, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("proxy: Config.NodeName is required (the name of this node, to find its local endpoints)")
	}
	if cfg.ClusterCIDR != "" {
		ip, n, err := net.ParseCIDR(cfg.ClusterCIDR)
		if err != nil || ip.To4() == nil {
			return nil, fmt.Errorf("proxy: cluster CIDR %q is not an IPv4 CIDR (e.g. 10.42.0.0/16)", cfg.ClusterCIDR)
		}
		cfg.ClusterCIDR = n.String()
	}
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeIPTables
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "proxy")
	return &Proxier{
		cfg: cfg, client: client, log: log,
		s:      modeOf(w, ct, cfg.FullSyncPeriod),
		health: newHealthServer(log, 2*cfg.SyncPeriod),
		kick:   make(chan struct{}, 1),
		ready:  make(chan struct{}),
	}, nil
}

// routeLocalnet is the sysctl that lets DNAT send packets addressed to
// 127.0.0.1 elsewhere; without it NodePorts do not answer on 127.0.0.1.
const routeLocalnet = "/proc/sys/net/ipv4/conf/all/route_localnet"

// allowLocalhostNodePorts sets net.ipv4.conf.all.route_localnet to 1, as
// kube-proxy does by default; KUBE-FIREWALL drops what other hosts would
// send to 127.0.0.0/8 through it.
func allowLocalhostNodePorts(log *slog.Logger) error {
	cur, err := os.ReadFile(routeLocalnet)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(routeLocalnet, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("set sysctl net.ipv4.conf.all.route_localnet=1: %w", err)
	}
	log.Info("set sysctl", "name", "net.ipv4.conf.all.route_localnet", "value", 1, "was", strings.TrimSpace(string(cur)))
	return nil
}

// Ready is closed after the first successful full sync.
func (p *Proxier) Ready() <-chan struct{} { return p.ready }

func (p *Proxier) changed() {
	p.health.queued()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Start watches Services and EndpointSlices and keeps the rules in step
// until ctx ends. A failed sync is retried with backoff, as a full sync.
func (p *Proxier) Start(ctx context.Context) error {
	if p.cfg.Mode == ModeIPTables {
		if err := allowLocalhostNodePorts(p.log); err != nil {
			p.log.Warn("NodePorts will not answer on 127.0.0.1", "err", err)
		}
	}
	p.removeOtherMode()
	// As kube-proxy: leave objects handed to another proxy, and the slices
	// of headless services, out of the caches altogether.
	f := informers.NewSharedInformerFactoryWithOptions(p.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "!" + labelServiceProxyName + ",!" + labelHeadless
		}))
	svcs := f.Core().V1().Services()
	slices := f.Discovery().V1().EndpointSlices()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.changed() },
		UpdateFunc: func(any, any) { p.changed() },
		DeleteFunc: func(any) { p.changed() },
	}
	for _, inf := range []cache.SharedIndexInformer{svcs.Informer(), slices.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("proxy: watch: %w", err)
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("proxy: the %v cache did not sync; check that the agent can reach the apiserver", typ)
		}
	}
	list := func() Input {
		in := Input{NodeName: p.cfg.NodeName, NodeIPs: p.cfg.NodeIPs, ClusterCIDR: p.cfg.ClusterCIDR}
		ss, _ := svcs.Lister().List(labels.Everything())
		es, _ := slices.Lister().List(labels.Everything())
		in.Services = append([]*v1.Service(nil), ss...)
		in.Slices = append([]*discovery.EndpointSlice(nil), es...)
		return in
	}
	p.run(ctx, list)
	return nil
}

// run is the sync loop: one sync now, then one per change (at most one per
// MinSyncPeriod), one per SyncPeriod, and retries after errors.
func (p *Proxier) run(ctx context.Context, list func() Input) {
	periodic := time.NewTicker(p.cfg.SyncPeriod)
	defer periodic.Stop()
	retry := time.NewTimer(0) // the first sync
	defer retry.Stop()
	backoff := p.cfg.MinSyncPeriod
	defer p.health.close()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-periodic.C:
			p.s.periodic()
		case <-retry.C:
		}
		if wait := p.cfg.MinSyncPeriod - time.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		select { // changes that came while waiting are in this sync
		case <-p.kick:
		default:
		}
		start := time.Now()
		last = start
		in := list()
		res, err := p.s.sync(start, in)
		if err != nil {
			p.log.Error("sync failed; retrying", "err", err, "retryIn", backoff)
			retry.Reset(backoff)
			backoff = min(2*backoff, p.cfg.SyncPeriod)
			continue
		}
		backoff = p.cfg.MinSyncPeriod
		if res.Again > 0 {
			retry.Reset(res.Again) // flushed chains to delete
		}
		p.health.sync(in)
		p.log.Info("synced service rules", "full", res.Full, "servicePorts", res.ServicePorts,
			"endpoints", res.Endpoints, "rules", res.Rules, "chainsWritten", res.ChainsWritten,
			"chainsDeleted", res.ChainsDeleted, "conntrackDeleted", res.ConntrackDeleted,
			"duration", time.Since(start))
		if res.Full {
			p.readyOnce.Do(func() { close(p.ready) })
		}
	}
}

func modeOf(w iptsync.Writer, ct conntrackCleaner, fullSyncPeriod time.Duration) modeSyncer {
	if w == nil {
		return nil
	}
	return newSyncer(w, ct, fullSyncPeriod)
}

// removeOtherMode removes the rules the other mode left (a switch of
// --proxy-mode), as kube-proxy does.
func (p *Proxier) removeOtherMode() {
	var err error
	if p.cfg.Mode == ModeNFTables {
		err = cleanupIPTables(p.log)
	} else {
		err = cleanupNFTables(p.log)
	}
	if err != nil {
		p.log.Warn("could not remove the rules of the other proxy mode", "err", err)
	}
}
