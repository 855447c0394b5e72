package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in orch's controller list.
const Name = "horizontalpodautoscaling"

// Upstream kube-controller-manager's defaults for the HPA flags.
const (
	// SyncPeriod is how often each autoscaler is looked at
	// (--horizontal-pod-autoscaler-sync-period).
	SyncPeriod = 15 * time.Second
	// DownscaleStabilization is the scale-down window of an autoscaler
	// that sets none (--horizontal-pod-autoscaler-downscale-stabilization).
	DownscaleStabilization = 5 * time.Minute
	// Tolerance is how far the usage ratio may stray from 1.0 before the
	// count changes (--horizontal-pod-autoscaler-tolerance), unless the
	// autoscaler's behavior sets its own.
	Tolerance = 0.1
	// CPUInitializationPeriod and InitialReadinessDelay decide when a new
	// pod's CPU samples count (--horizontal-pod-autoscaler-cpu-
	// initialization-period, --horizontal-pod-autoscaler-initial-
	// readiness-delay).
	CPUInitializationPeriod = 5 * time.Minute
	InitialReadinessDelay   = 30 * time.Second
)

// component is the source of the controller's events, as upstream's.
const component = "horizontal-pod-autoscaler"

// Controller scales the targets of HorizontalPodAutoscalers.
type Controller struct {
	client    kubernetes.Interface
	hpas      autoscalinglisters.HorizontalPodAutoscalerLister
	pods      corelisters.PodLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	log       *slog.Logger
	clock     clock.WithTicker
	targets   *targets
	resources ResourceMetrics
	extra     extraMetrics
	versions  customclient.AvailableAPIsGetter
	history   *history
	selectors *selectors

	tolerance       float64
	downscaleWindow time.Duration
	readiness       readiness
}

// New builds the controller on ctx, reading resource metrics from the
// resource metrics API; ctx.Config is needed for the scale, metrics and
// discovery clients.
func New(ctx controller.Context) (*Controller, error) {
	return NewWithMetrics(ctx, nil)
}

// NewWithMetrics is New reading resource metrics from resources (nil:
// the resource metrics API).
func NewWithMetrics(ctx controller.Context, resources ResourceMetrics) (*Controller, error) {
	ctx = ctx.WithDefaults()
	if ctx.Config == nil {
		return nil, fmt.Errorf("the horizontal pod autoscaler needs a client configuration for the scale and metrics APIs")
	}
	disco, err := discovery.NewDiscoveryClientForConfig(ctx.Config)
	if err != nil {
		return nil, fmt.Errorf("the discovery client: %w", err)
	}
	t, err := newTargets(ctx.Config, disco)
	if err != nil {
		return nil, err
	}
	if resources == nil {
		client, err := metricsclient.NewForConfig(ctx.Config)
		if err != nil {
			return nil, fmt.Errorf("the resource metrics client: %w", err)
		}
		resources = metricsAPI{client.MetricsV1beta1()}
	}
	external, err := externalclient.NewForConfig(ctx.Config)
	if err != nil {
		return nil, fmt.Errorf("the external metrics client: %w", err)
	}
	versions := customclient.NewAvailableAPIsGetter(disco)
	hpaInformer := ctx.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	podInformer := ctx.Informers.Core().V1().Pods()
	c := &Controller{
		client: ctx.Client, hpas: hpaInformer.Lister(), pods: podInformer.Lister(),
		synced: []cache.InformerSynced{hpaInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		// Every failure and every status-only change waits one sync
		// period, as upstream's fixed-interval limiter makes them.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[string](fixedInterval(SyncPeriod),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "horizontalpodautoscaler", Clock: ctx.Clock}),
		recorder: ctx.Recorder(component), log: ctx.Log.With("controller", Name), clock: ctx.Clock,
		targets: t, resources: resources, versions: versions,
		extra:     &adapterMetrics{custom: customclient.NewForConfig(ctx.Config, t.mapper, versions), external: external, discovery: disco},
		history:   newHistory(),
		selectors: newSelectors(),
		tolerance: Tolerance, downscaleWindow: DownscaleStabilization,
		readiness: readiness{cpuInitializationPeriod: CPUInitializationPeriod, initialReadinessDelay: InitialReadinessDelay},
	}
	hpaInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: c.added, UpdateFunc: c.updated, DeleteFunc: c.deleted})
	return c, nil
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	// A custom metrics adapter registered later, or its preferred version
	// changed, is noticed within a sync period.
	go func() {
		ticker := c.clock.NewTicker(SyncPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				c.versions.Invalidate()
			}
		}
	}()
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Synced: c.synced, Log: c.log})
}

// added registers a new autoscaler and looks at it at once.
func (c *Controller) added(obj any) {
	hpa, ok := controller.ObjectFrom[*autoscalingv2.HorizontalPodAutoscaler](obj)
	if !ok {
		return
	}
	c.selectors.add(hpa.Namespace, hpa.Name)
	c.queue.Add(controller.Key(hpa))
}

// updated looks at an autoscaler at once when its spec changed (its
// generation moved); a change of its status alone (the controller's own
// writes) waits for the next sync.
func (c *Controller) updated(old, cur any) {
	prev, ok1 := controller.ObjectFrom[*autoscalingv2.HorizontalPodAutoscaler](old)
	hpa, ok2 := controller.ObjectFrom[*autoscalingv2.HorizontalPodAutoscaler](cur)
	if !ok2 {
		return
	}
	if ok1 && prev.Generation != hpa.Generation {
		c.added(hpa)
		return
	}
	c.queue.AddRateLimited(controller.Key(hpa))
}

func (c *Controller) deleted(obj any) {
	hpa, ok := controller.ObjectFrom[*autoscalingv2.HorizontalPodAutoscaler](obj)
	if !ok {
		return
	}
	c.queue.Forget(controller.Key(hpa))
	c.selectors.delete(hpa.Namespace, hpa.Name)
}

// reconcile syncs the autoscaler of key and looks at it again a sync
// period later (after a failure too, through the queue's limiter).
func (c *Controller) reconcile(ctx context.Context, key string) (worker.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return worker.Result{}, worker.Terminal(err)
	}
	hpa, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.history.forget(key)
		return worker.Result{}, nil
	}
	if err != nil {
		return worker.Result{}, err
	}
	if err := c.sync(ctx, hpa.DeepCopy(), key); err != nil {
		return worker.Result{}, err
	}
	return worker.Result{After: SyncPeriod}, nil
}

// fixedInterval is a rate limiter that always waits interval.
type fixedInterval time.Duration

var _ workqueue.TypedRateLimiter[string] = fixedInterval(0)

func (f fixedInterval) When(string) time.Duration { return time.Duration(f) }
func (fixedInterval) NumRequeues(string) int      { return 0 }
func (fixedInterval) Forget(string)               {}
