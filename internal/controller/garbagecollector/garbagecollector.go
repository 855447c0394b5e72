package garbagecollector

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "garbagecollector"

// Defaults as kube-controller-manager's.
const (
	// Workers is --concurrent-gc-syncs: workers for each of the two queues.
	Workers = 20
	// SyncPeriod is how often discovery is read again for new resources.
	SyncPeriod = 30 * time.Second
	// eventComponent is the source of the events the collector records.
	eventComponent = "garbage-collector-controller"
)

// Controller is the garbage collector. See the package documentation.
type Controller struct {
	log       *slog.Logger
	clock     clock.WithTicker
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	mapper    *restmapper.DeferredDiscoveryRESTMapper

	builder          *graphBuilder
	attemptToDelete  workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan  workqueue.TypedRateLimitingInterface[*node]
	absentOwnerCache *referenceCache

	// workerLock pauses the workers (write lock) while the monitors change
	// and their caches fill again.
	workerLock sync.RWMutex

	synced chan struct{}
}

// New builds the garbage collector from ctx. It watches every resource
// discovery reports with its own metadata informers (not ctx.Informers).
func New(ctx controller.Context) *Controller {
	log := ctx.Log.With("controller", Name)
	clk := ctx.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(ctx.Client.Discovery()))
	attemptToDelete := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
		workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_delete", Clock: clk})
	attemptToOrphan := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
		workqueue.TypedRateLimitingQueueConfig[*node]{Name: "garbage_collector_attempt_to_orphan", Clock: clk})
	absent := newReferenceCache(absentOwnerCacheSize)
	c := &Controller{
		log:              log,
		clock:            clk,
		discovery:        ctx.Client.Discovery(),
		metadata:         ctx.Metadata,
		mapper:           mapper,
		attemptToDelete:  attemptToDelete,
		attemptToOrphan:  attemptToOrphan,
		absentOwnerCache: absent,
		synced:           make(chan struct{}),
	}
	c.builder = &graphBuilder{
		log:      log,
		metadata: ctx.Metadata,
		shared:   ctx.Informers,
		mapper:   mapper,
		recorder: ctx.Recorder(eventComponent),
		monitors: map[schema.GroupVersionResource]*monitor{},
		graphChanges: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*event](),
			workqueue.TypedRateLimitingQueueConfig[*event]{Name: "garbage_collector_graph_changes", Clock: clk}),
		uidToNode:        &uidToNode{nodes: map[types.UID]*node{}},
		attemptToDelete:  attemptToDelete,
		attemptToOrphan:  attemptToOrphan,
		absentOwnerCache: absent,
	}
	return c
}

// Start runs the collector until ctx ends: it discovers the resources,
// watches them, and once every watch has listed, collects garbage with
// Workers workers per queue. Discovery is read again every SyncPeriod.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.attemptToOrphan.ShutDown() // when ctx ends before the caches sync
	defer c.attemptToDelete.ShutDown()

	wg.Add(2)
	go func() { defer wg.Done(); c.builder.run(ctx) }()
	go func() { defer wg.Done(); c.syncLoop(ctx) }()

	if !cache.WaitForNamedCacheSync("garbage collector", ctx.Done(), c.builder.isSynced) {
		return nil
	}
	close(c.synced)
	c.log.Info("All resource monitors have synced. Proceeding to collect garbage")
	wg.Add(1)
	go func() {
		defer wg.Done()
		worker.Run(ctx, c.attemptToOrphan, c.orphan, worker.Options{Workers: Workers, Log: c.log.With("queue", "attempt-to-orphan")})
	}()
	return worker.Run(ctx, c.attemptToDelete, c.collect, worker.Options{Workers: Workers, Log: c.log.With("queue", "attempt-to-delete")})
}

// Synced is closed once the collector has watched every resource and
// started collecting.
func (c *Controller) Synced() <-chan struct{} {
	return c.synced
}

// GraphHasUID reports whether the graph holds uid (for tests and
// debugging).
func (c *Controller) GraphHasUID(uid types.UID) bool {
	_, ok := c.builder.uidToNode.Read(uid)
	return ok
}

// syncLoop reads discovery now and every SyncPeriod, and changes the
// monitors when the set of resources changed.
func (c *Controller) syncLoop(ctx context.Context) {
	ticker := c.clock.NewTicker(SyncPeriod)
	defer ticker.Stop()
	var current map[schema.GroupVersionResource]struct{}
	for {
		current = c.resync(ctx, current)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// resync compares discovery with old and, when it changed, pauses the
// workers, resets the REST mapper and changes the monitors. It returns the
// resources now watched.
func (c *Controller) resync(ctx context.Context, old map[schema.GroupVersionResource]struct{}) map[schema.GroupVersionResource]struct{} {
	resources, err := deletableResources(c.discovery)
	if len(resources) == 0 {
		c.log.Warn("no resources reported by discovery, skipping garbage collector sync", "err", err)
		return old
	}
	if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
		// Keep watching what a failing group served before.
		for gvr := range old {
			if _, ok := failed[gvr.GroupVersion()]; ok {
				resources[gvr] = struct{}{}
			}
		}
	} else if err != nil {
		c.log.Warn("discovery failed for some resources", "err", err)
	}
	if reflect.DeepEqual(old, resources) {
		return old
	}
	c.workerLock.Lock()
	defer c.workerLock.Unlock()
	c.mapper.Reset()
	if err := c.builder.syncMonitors(resources); err != nil {
		c.log.Error("failed to sync all resource monitors; retrying at the next sync", "err", err)
		// Return old so the next tick tries again.
		return old
	}
	// Keep the workers paused until the new monitors have listed, for at
	// most one period.
	wait, cancel := context.WithTimeout(ctx, SyncPeriod)
	defer cancel()
	if old != nil && !cache.WaitForCacheSync(wait.Done(), c.builder.isSynced) {
		c.log.Error("timed out waiting for the resource monitors to sync")
		return old
	}
	c.log.Debug("synced garbage collector", "resources", len(resources))
	return resources
}
