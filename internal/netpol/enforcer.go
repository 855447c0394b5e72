package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/iptsync"
	"orch/internal/worker"
)

// Defaults of Config.
const (
	DefaultResync         = 30 * time.Second
	DefaultFullSyncPeriod = time.Hour
)

// Config configures an Enforcer.
type Config struct {
	NodeName string // whose pods it isolates
	// ClusterCIDRs are the pods' CIDRs as cidr.ParseList returns them: at
	// most one per IP family (dual stack: 10.42.0.0/16, fd00:42::/56). The
	// enforcer isolates pods in each of their families. None: IPv4 only.
	ClusterCIDRs []netip.Prefix
	// PodBridge is the Linux bridge of the node's pods (Input.PodBridge).
	PodBridge string
	// Resync is how often the rules and the jumps to them are checked
	// without a change (a missing jump makes that sync a full one).
	Resync time.Duration
	// FullSyncPeriod is how often every chain is rewritten and stale
	// chains are looked for.
	FullSyncPeriod time.Duration
}

// jumps send every packet to the enforcer's chains before any other rule
// of FORWARD and INPUT (the Service proxy's KUBE-FORWARD accepts
// masqueraded traffic).
var jumps = []iptsync.Jump{
	{Table: "filter", From: "FORWARD", To: chainForward, Comment: "kubernetes network policy"},
	{Table: "filter", From: "INPUT", To: chainInput, Comment: "kubernetes network policy"},
}

// who leads the errors of the iptables drivers.
const who = "network policy"

// Enforcer keeps one node's network policy rules in step with the
// NetworkPolicies, Pods and Namespaces of the cluster.
type Enforcer struct {
	cfg      Config
	client   kubernetes.Interface
	log      *slog.Logger
	families []*familySync // in the order of Config.ClusterCIDRs

	ready     chan struct{}
	readyOnce sync.Once
}

// familySync writes the rules of one IP family.
type familySync struct {
	family iptsync.Family
	s      iptsync.Syncer
	// sets writes the family's ipsets, nil without ip_set; the rules
	// use maxSets at most.
	sets    *kernelSets
	maxSets int
}

// New checks cfg and makes an Enforcer. It fails when iptables, or for an
// IPv6 cluster family ip6tables, is missing: a family left unenforced
// would leave its pods open.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Enforcer, error) {
	return newEnforcer(cfg, client, log, kernelWriter, ipsetsAvailable())
}

// kernelWriter writes family f's rules with iptables-restore (or
// ip6tables-restore).
func kernelWriter(f iptsync.Family) (iptsync.Writer, error) {
	return iptsync.NewFamilyDriver(f, who, jumps, true)
}

// newEnforcer makes an Enforcer that writes each family's rules through
// the Writer writer gives for it, with the kernel's ipsets when sets.
func newEnforcer(cfg Config, client kubernetes.Interface, log *slog.Logger, writer func(iptsync.Family) (iptsync.Writer, error), sets bool) (*Enforcer, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("network policy: Config.NodeName is required (the name of this node, to find its pods)")
	}
	fams := familiesOf(cfg.ClusterCIDRs)
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if log == nil {
		log = slog.Default()
	}
	e := &Enforcer{cfg: cfg, client: client, log: log.With("component", "network policy"), ready: make(chan struct{})}
	for _, f := range fams {
		w, err := writer(f)
		if err != nil {
			return nil, err
		}
		fs := &familySync{family: f, s: iptsync.Syncer{W: w, FullSyncPeriod: cfg.FullSyncPeriod}}
		if sets {
			fs.sets, fs.maxSets = &kernelSets{family: f}, setBudget/len(fams)
		}
		e.families = append(e.families, fs)
	}
	if !sets {
		e.log.Info("no ipsets in this kernel: network policy rules name each peer pod's address")
	}
	return e, nil
}

// Ready is closed after the first successful sync: the policies of the
// time are enforced on this node.
func (e *Enforcer) Ready() <-chan struct{} { return e.ready }

// Start watches the policies, pods and namespaces and keeps the rules in
// step until ctx ends; a failed sync is retried with back-off, as a full
// sync. A change is enforced at the next sync, at once when none runs.
func (e *Enforcer) Start(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(e.client, 0)
	policies := f.Networking().V1().NetworkPolicies()
	pods := f.Core().V1().Pods()
	namespaces := f.Core().V1().Namespaces()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "network policy"})
	defer queue.ShutDown()
	const key = "rules"
	changed := func(any) { queue.Add(key) }
	all := cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(any, any) { queue.Add(key) }, DeleteFunc: changed}
	for _, inf := range []cache.SharedIndexInformer{policies.Informer(), namespaces.Informer()} {
		if _, err := inf.AddEventHandler(all); err != nil {
			return fmt.Errorf("network policy: watch: %w", err)
		}
	}
	// Pods change status often; only what the rules read matters.
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Pod)
			n, ok2 := cur.(*v1.Pod)
			if !ok1 || !ok2 || !samePod(o, n) {
				queue.Add(key)
			}
		},
		DeleteFunc: changed,
	}); err != nil {
		return fmt.Errorf("network policy: watch: %w", err)
	}
	f.StartWithContext(ctx)
	defer f.Shutdown()
	list := func() (Input, error) {
		in := Input{NodeName: e.cfg.NodeName, PodBridge: e.cfg.PodBridge}
		var err error
		ps, err1 := policies.Lister().List(labels.Everything())
		pl, err2 := pods.Lister().List(labels.Everything())
		ns, err3 := namespaces.Lister().List(labels.Everything())
		if err = errors.Join(err1, err2, err3); err != nil {
			return in, err
		}
		in.Policies, in.Pods, in.Namespaces = ps, pl, ns
		return in, nil
	}
	queue.Add(key)
	return worker.Run(ctx, queue, func(context.Context, string) (worker.Result, error) {
		in, err := list()
		if err == nil {
			err = e.sync(in)
		}
		if err != nil {
			return worker.Result{}, fmt.Errorf("network policy: %w", err)
		}
		for _, fs := range e.families {
			fs.s.JumpsDue = true // the next sync, even a periodic one, checks them
		}
		return worker.Result{After: e.cfg.Resync}, nil
	}, worker.Options{Log: e.log, Synced: []cache.InformerSynced{
		policies.Informer().HasSynced, pods.Informer().HasSynced, namespaces.Informer().HasSynced}})
}

// sync writes the rules of in in every family of the cluster. A family
// that fails does not hold back the others' changes; the retry syncs all.
func (e *Enforcer) sync(in Input) error {
	var errs []error
	for _, fs := range e.families {
		in.Family = fs.family
		if err := e.syncFamily(fs, in); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fs.family, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	e.readyOnce.Do(func() { close(e.ready) })
	return nil
}

// syncFamily writes the rules of in, whose Family is fs's: the sets they
// match first, then the chains, then the sets no longer matched go. When
// the sets cannot be written (the kernel's limit of sets is reached) the
// rules name each peer address, for this sync.
func (e *Enforcer) syncFamily(fs *familySync, in Input) error {
	start := time.Now()
	in.MaxSets = fs.maxSets
	rs := Build(in)
	var after []setOp
	setsChanged := 0
	if fs.sets != nil {
		have, err := fs.sets.list()
		if err != nil {
			return err
		}
		before, later := planSets(rs.Sets, have)
		if err := fs.sets.apply(before); err != nil {
			e.log.Warn("cannot write the ipsets of network policy; naming each peer address instead", "family", fs.family, "err", err)
			in.MaxSets = 0
			rs = Build(in)
			before, later = planSets(nil, have)
		}
		after, setsChanged = later, len(before)
	}
	text, full, err := fs.s.Sync(start, tables(rs))
	if err != nil {
		return err
	}
	if len(after) > 0 { // only with sets
		if err := fs.sets.apply(after); err != nil {
			// A set still matched (by rules another program copied?)
			// stays until a later sync destroys it.
			e.log.Warn("cannot destroy an unused ipset of network policy", "family", fs.family, "err", err)
		}
	}
	if len(text.Data) > 0 || full || setsChanged > 0 || len(after) > 0 {
		e.log.Info("synced network policy rules", "family", fs.family, "full", full, "isolatedPods", rs.Pods, "policyChains", rs.Policies,
			"rules", text.Rules, "chainsWritten", text.Changed, "chainsDeleted", len(text.Deleted),
			"sets", len(rs.Sets), "setChanges", setsChanged, "setsDestroyed", len(after), "duration", time.Since(start))
	}
	return nil
}

// tables are the tables of rs for iptsync: the per-pod and per-policy
// chains that are no longer wanted go.
func tables(rs *Ruleset) []iptsync.Table {
	return []iptsync.Table{{Name: "filter", Chains: rs.Chains, Stale: isObjectChain}}
}

// samePod reports whether two versions of a pod give the same rules.
func samePod(a, b *v1.Pod) bool {
	return a.Spec.NodeName == b.Spec.NodeName && a.Status.Phase == b.Status.Phase &&
		a.Status.PodIP == b.Status.PodIP && slices.Equal(a.Status.PodIPs, b.Status.PodIPs) &&
		labels.Equals(a.Labels, b.Labels)
}

// Cleanup removes every rule and chain the enforcer writes, in both IP
// families: the jumps from FORWARD and INPUT, then its chains, then its
// ipsets. It is for
// `orch agent cleanup` and for switching enforcement off
// (--disable-network-policy); it must not run while an Enforcer runs.
func Cleanup(log *slog.Logger) error {
	err := errors.Join(cleanupFamily(iptsync.IPv4, log), cleanupFamily(iptsync.IPv6, log))
	if err != nil {
		return err // the sets may still be matched
	}
	return cleanupSets()
}

// cleanupFamily removes the rules of one family. A host without ip6tables
// (or IPv6) has no IPv6 rules of ours (the enforcer cannot start its IPv6 family
// there), so that is not an error; a missing iptables (IPv4) is, as it
// always was.
func cleanupFamily(f iptsync.Family, log *slog.Logger) error {
	if f == iptsync.IPv6 && iptsync.NoIPv6() {
		return nil
	}
	d, err := iptsync.NewFamilyDriver(f, who, jumps, true)
	if err != nil {
		return err
	}
	errs := []error{d.Jumps.Delete()}
	chains, err := d.Chains("filter")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if data, n := iptsync.CleanupText("filter", chains, isOwnedChain); n > 0 {
		if err := d.Restore(data); err != nil {
			errs = append(errs, fmt.Errorf("network policy: remove %s chains: %w", f, err))
		} else if log != nil {
			log.Info("removed network policy chains", "family", f, "chains", n)
		}
	}
	return errors.Join(errs...)
}
