package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"orch/internal/cidr"

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

// modeSyncer writes the rules of one mode in one IP family.
type modeSyncer interface {
	// sync writes the rules of in (of the syncer's family).
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
	NodeIPs  []net.IP // this node's addresses, of either family
	// ClusterCIDRs are the pods' CIDRs as cidr.ParseList returns them: at
	// most one per IP family, the primary first (dual stack: 10.42.0.0/16
	// and fd00:42::/56). The proxy programs the families of these CIDRs,
	// IPv4 alone when there is none. Traffic to a cluster IP from outside
	// its family's CIDR is masqueraded; without CIDRs there is no such
	// masquerade (kube-proxy without --cluster-cidr).
	ClusterCIDRs []netip.Prefix
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

// Proxier is the service proxy of one node: one set of informers and one
// health server, and a mode syncer per IP family.
type Proxier struct {
	cfg      Config
	client   kubernetes.Interface
	log      *slog.Logger
	families []*familyState
	health   *healthServer

	kick      chan struct{}
	ready     chan struct{}
	readyOnce sync.Once
}

// familyState is what the Proxier keeps of one IP family.
type familyState struct {
	family      v1.IPFamily
	clusterCIDR string // "" when Config.ClusterCIDRs has none
	s           modeSyncer
	synced      bool // a full sync succeeded
}

// New checks cfg and makes a Proxier. It fails when the mode's tools
// (iptables, ip6tables for IPv6, or nft 1.0.1 or later) are missing.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Proxier, error) {
	p, err := newProxier(cfg, client, log)
	if err != nil {
		return nil, err
	}
	for _, f := range p.families {
		if f.s, err = newModeSyncer(p.cfg.Mode, f.family, p.cfg.FullSyncPeriod); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// newModeSyncer makes the syncer of a mode and a family, with conntrack
// clean-up through netlink.
func newModeSyncer(mode string, f v1.IPFamily, fullSyncPeriod time.Duration) (modeSyncer, error) {
	ct := netlinkConntrack{family: conntrackFamily(f)}
	if mode == ModeNFTables {
		nft, err := knftables.New(nftFamily(f), nftTable)
		if err != nil {
			return nil, fmt.Errorf("proxy: --proxy-mode nftables needs nft 1.0.1 or later and a kernel with nf_tables (%s; Debian: apt-get install nftables): %w", f, err)
		}
		return &nftMode{s: newNFTSyncer(nft, fullSyncPeriod), udp: udpCleaner{ct: ct}}, nil
	}
	d, err := newIPTablesDriver(f)
	if err != nil {
		return nil, err
	}
	return newSyncer(d, ct, fullSyncPeriod), nil
}

// newProxier checks cfg and makes a Proxier whose families have no syncer
// yet (New, or a test, sets them).
func newProxier(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Proxier, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("proxy: Config.NodeName is required (the name of this node, to find its local endpoints)")
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeIPTables
	case ModeIPTables, ModeNFTables:
	default:
		return nil, fmt.Errorf("proxy: unknown proxy mode %q (iptables or nftables)", cfg.Mode)
	}
	fams := familiesOf(cfg.ClusterCIDRs)
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "proxy")
	return &Proxier{
		cfg: cfg, client: client, log: log,
		families: fams,
		health:   newHealthServer(log, 2*cfg.SyncPeriod),
		kick:     make(chan struct{}, 1),
		ready:    make(chan struct{}),
	}, nil
}

// familiesOf are the families of the cluster CIDRs in their order, each
// with its CIDR; IPv4 without a CIDR when there is none.
func familiesOf(cidrs []netip.Prefix) []*familyState {
	if len(cidrs) == 0 {
		return []*familyState{{family: v1.IPv4Protocol}}
	}
	var out []*familyState
	for _, p := range cidrs {
		out = append(out, &familyState{family: cidr.FamilyOf(p.Addr().String()), clusterCIDR: p.Masked().String()})
	}
	return out
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

// Start watches Services and EndpointSlices and keeps the rules of every
// family in step until ctx ends. A failed sync is retried with backoff, as
// a full sync.
func (p *Proxier) Start(ctx context.Context) error {
	if p.cfg.Mode == ModeIPTables && p.hasFamily(v1.IPv4Protocol) {
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
	f.StartWithContext(ctx)
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
		in := Input{NodeName: p.cfg.NodeName, NodeIPs: p.cfg.NodeIPs}
		ss, _ := svcs.Lister().List(labels.Everything())
		es, _ := slices.Lister().List(labels.Everything())
		in.Services = append([]*v1.Service(nil), ss...)
		in.Slices = append([]*discovery.EndpointSlice(nil), es...)
		return in
	}
	p.run(ctx, list)
	return nil
}

// hasFamily reports whether the proxy programs the family.
func (p *Proxier) hasFamily(f v1.IPFamily) bool {
	for _, pf := range p.families {
		if pf.family == f {
			return true
		}
	}
	return false
}

// run is the sync loop: one sync now, then one per change (at most one per
// MinSyncPeriod), one per SyncPeriod, and retries after errors. list gives
// the objects of every family; each family's syncer gets them as an Input
// of its family.
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
			for _, f := range p.families {
				f.s.periodic()
			}
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
		again, err := p.syncFamilies(start, in)
		if err != nil {
			p.log.Error("sync failed; retrying", "err", err, "retryIn", backoff)
			retry.Reset(backoff)
			backoff = min(2*backoff, p.cfg.SyncPeriod)
			continue
		}
		backoff = p.cfg.MinSyncPeriod
		if again > 0 {
			retry.Reset(again) // flushed chains to delete
		}
		p.health.sync(in)
		if p.allSynced() {
			p.readyOnce.Do(func() { close(p.ready) })
		}
	}
}

// syncFamilies syncs every family with in, each as an Input of its own
// family. A family that fails does not keep the others from syncing; the
// errors come back together, and the retry rewrites only what failed
// (the others' partial syncs find nothing to change). again is the
// soonest another sync is asked for.
func (p *Proxier) syncFamilies(start time.Time, in Input) (time.Duration, error) {
	var again time.Duration
	var errs []error
	for _, f := range p.families {
		fin := in
		fin.Family, fin.ClusterCIDR = f.family, f.clusterCIDR
		res, err := f.s.sync(start, fin)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.family, err))
			continue
		}
		f.synced = f.synced || res.Full
		if res.Again > 0 && (again == 0 || res.Again < again) {
			again = res.Again
		}
		p.log.Info("synced service rules", "family", f.family, "full", res.Full, "servicePorts", res.ServicePorts,
			"endpoints", res.Endpoints, "rules", res.Rules, "chainsWritten", res.ChainsWritten,
			"chainsDeleted", res.ChainsDeleted, "conntrackDeleted", res.ConntrackDeleted,
			"duration", time.Since(start))
	}
	return again, errors.Join(errs...)
}

// allSynced reports whether every family had a successful full sync.
func (p *Proxier) allSynced() bool {
	for _, f := range p.families {
		if !f.synced {
			return false
		}
	}
	return true
}

// removeOtherMode removes the rules the other mode left in the proxy's
// families (a switch of --proxy-mode), as kube-proxy does.
func (p *Proxier) removeOtherMode() {
	for _, f := range p.families {
		var err error
		if p.cfg.Mode == ModeNFTables {
			err = cleanupIPTables(f.family, p.log)
		} else {
			err = cleanupNFTables(f.family, p.log)
		}
		if err != nil {
			p.log.Warn("could not remove the rules of the other proxy mode", "family", f.family, "err", err)
		}
	}
}
