package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Enforcer keeps one node's network policy rules in step with the
// NetworkPolicies, Pods and Namespaces of the cluster.
type Enforcer struct {
	cfg    Config
	client kubernetes.Interface
	log    *slog.Logger
	s      iptsync.Syncer

	ready     chan struct{}
	readyOnce sync.Once
}

// New checks cfg and makes an Enforcer. It fails when iptables is missing.
func New(cfg Config, client kubernetes.Interface, log *slog.Logger) (*Enforcer, error) {
	d, err := iptsync.NewDriver("network policy", jumps, true)
	if err != nil {
		return nil, err
	}
	return newEnforcer(cfg, client, log, d)
}

func newEnforcer(cfg Config, client kubernetes.Interface, log *slog.Logger, w iptsync.Writer) (*Enforcer, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("network policy: Config.NodeName is required (the name of this node, to find its pods)")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if log == nil {
		log = slog.Default()
	}
	return &Enforcer{
		cfg: cfg, client: client, log: log.With("component", "network policy"),
		s:     iptsync.Syncer{W: w, FullSyncPeriod: cfg.FullSyncPeriod},
		ready: make(chan struct{}),
	}, nil
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
	f.Start(ctx.Done())
	defer f.Shutdown()
	list := func() (Input, error) {
		in := Input{NodeName: e.cfg.NodeName}
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
		e.s.JumpsDue = true // the next sync, even a periodic one, checks them
		return worker.Result{After: e.cfg.Resync}, nil
	}, worker.Options{Log: e.log, Synced: []cache.InformerSynced{
		policies.Informer().HasSynced, pods.Informer().HasSynced, namespaces.Informer().HasSynced}})
}

// sync writes the rules of in.
func (e *Enforcer) sync(in Input) error {
	start := time.Now()
	rs := Build(in)
	text, full, err := e.s.Sync(start, []iptsync.Table{{Name: "filter", Chains: rs.Chains, Stale: isObjectChain}})
	if err != nil {
		return err
	}
	if len(text.Data) > 0 || full {
		e.log.Info("synced network policy rules", "full", full, "isolatedPods", rs.Pods, "policyChains", rs.Policies,
			"rules", text.Rules, "chainsWritten", text.Changed, "chainsDeleted", len(text.Deleted), "duration", time.Since(start))
	}
	e.readyOnce.Do(func() { close(e.ready) })
	return nil
}

// samePod reports whether two versions of a pod give the same rules.
func samePod(a, b *v1.Pod) bool {
	return a.Spec.NodeName == b.Spec.NodeName && a.Status.Phase == b.Status.Phase &&
		a.Status.PodIP == b.Status.PodIP && slices.Equal(a.Status.PodIPs, b.Status.PodIPs) &&
		labels.Equals(a.Labels, b.Labels)
}

// Cleanup removes every rule and chain the enforcer writes: the jumps from
// FORWARD and INPUT, then its chains. It is for `orch agent cleanup` and
// for switching enforcement off (--disable-network-policy); it must not
// run while an Enforcer runs.
func Cleanup(log *slog.Logger) error {
	d, err := iptsync.NewDriver("network policy", jumps, true)
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
			errs = append(errs, fmt.Errorf("network policy: remove chains: %w", err))
		} else if log != nil {
			log.Info("removed network policy chains", "chains", n)
		}
	}
	return errors.Join(errs...)
}
