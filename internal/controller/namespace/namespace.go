// Package namespace is the namespace controller of kube-controller-manager:
// when a namespace is deleted (deletionTimestamp set, phase Terminating) it
// deletes everything in it and then removes the "kubernetes" finalizer from
// spec.finalizers through the finalize subresource, after which the
// apiserver removes the namespace.
//
// Deletion follows upstream (KEP-5080 ordered deletion, GA since 1.34): pods
// first, and only once no pod is left every other namespaced resource that
// discovery lists, each with deletecollection (or list and delete when the
// resource does not take it) using Background propagation, then a list to
// verify it is empty. While content remains, the namespace carries upstream's
// status conditions (NamespaceDeletionDiscoveryFailure,
// NamespaceDeletionGroupVersionParsingFailure,
// NamespaceDeletionContentFailure, NamespaceContentRemaining,
// NamespaceFinalizersRemaining) and the controller looks again after half
// the estimated time (15 s for objects held by finalizers, a pod's grace
// period for pods).
package namespace

import (
	"context"
	"errors"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "namespace"

// Defaults as kube-controller-manager's.
const (
	// Workers is --concurrent-namespace-syncs.
	Workers = 10
	// ResyncPeriod is --namespace-sync-period.
	ResyncPeriod = 5 * time.Minute
	// deletionGracePeriod delays the first look at a deleted namespace so
	// that objects created at the last moment are visible to the lists.
	deletionGracePeriod = 5 * time.Second
)

// Controller deletes the content of namespaces being deleted.
type Controller struct {
	log     *slog.Logger
	clock   clock.WithTicker
	lister  corelisters.NamespaceLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	deleter *deleter
}

// New builds the controller and registers its handlers on the shared
// namespace informer of ctx.Informers.
func New(ctx controller.Context) *Controller {
	clk := ctx.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := ctx.Log.With("controller", Name)
	informer := ctx.Informers.Core().V1().Namespaces()
	c := &Controller{
		log:    log,
		clock:  clk,
		lister: informer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// Retry at least every minute, never longer.
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 60*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace", Clock: clk}),
		deleter: &deleter{
			log:      log,
			clock:    clk,
			client:   ctx.Client,
			metadata: ctx.Metadata,
			discover: func() ([]*metav1.APIResourceList, error) {
				return discovery.ServerPreferredNamespacedResources(ctx.Client.Discovery())
			},
			unsupported: map[operationKey]bool{},
		},
	}
	c.synced = informer.Informer().HasSynced
	reg, err := informer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}, ResyncPeriod)
	if err != nil {
		// Only a stopped informer refuses handlers.
		log.Error("cannot watch namespaces", "err", err)
	} else {
		c.synced = reg.HasSynced
	}
	return c
}

// enqueue queues a namespace being deleted, after the grace period.
func (c *Controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil || ns.DeletionTimestamp.IsZero() {
		return
	}
	c.queue.AddAfter(ns.Name, deletionGracePeriod)
}

// Start runs Workers workers until ctx ends. The caller starts the
// informer factory.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Workers: Workers, Synced: []cache.InformerSynced{c.synced}, Log: c.log})
}

// reconcile deletes the content of namespace key; while content remains
// (being finalized), it looks again in about half the estimated time.
func (c *Controller) reconcile(ctx context.Context, key string) (worker.Result, error) {
	err := c.sync(ctx, key)
	var remaining *ResourcesRemainingError
	if errors.As(err, &remaining) {
		wait := time.Duration(remaining.Estimate/2+1) * time.Second
		c.log.Debug("content remaining in namespace", "namespace", key, "wait", wait)
		return worker.Result{After: wait}, nil
	}
	return worker.Result{}, err
}

// sync deletes the content of namespace name if it is being deleted.
func (c *Controller) sync(ctx context.Context, name string) error {
	start := c.clock.Now()
	defer func() { c.log.Debug("finished syncing namespace", "namespace", name, "duration", c.clock.Since(start)) }()
	ns, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.log.Info("Namespace has been deleted", "namespace", name)
		return nil
	}
	if err != nil {
		return err
	}
	return c.deleter.Delete(ctx, ns.Name)
}
