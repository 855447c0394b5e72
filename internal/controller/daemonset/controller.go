package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/controller/history"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs and its queue's name.
	name = "daemonset"
	// component is the events' source, as upstream.
	component = "daemonset-controller"
	// workers is upstream's --concurrent-daemonset-syncs default.
	workers = 2
	// burstReplicas caps the pods one sync creates, and those it deletes.
	burstReplicas = 250
	// statusUpdateRetries is how many times a failed status write is
	// retried on a fresh read.
	statusUpdateRetries = 1
	// Failed daemon pods are replaced after a delay that starts at
	// failedPodBackoffInitial and doubles per node up to failedPodBackoffMax.
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
	backoffGCInterval       = time.Minute
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller runs the DaemonSet loop.
type Controller struct {
	client     kubernetes.Interface
	recorder   record.EventRecorder
	log        *slog.Logger
	clock      clock.WithTicker
	dsLister   appslisters.DaemonSetLister
	history    history.History
	nodeLister corelisters.NodeLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	exp        *controller.Expectations
	delay      *controller.Delayer
	// failedPods spaces out the replacement of failed pods, per DaemonSet
	// and node, so the controller does not fight a kubelet that rejects them.
	failedPods *flowcontrol.Backoff
	done       chan struct{}
}

// New builds the controller from ctx and registers its handlers on the
// shared DaemonSet, ControllerRevision, pod and node informers; the caller
// starts the informer factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	apps, core := ctx.Informers.Apps().V1(), ctx.Informers.Core().V1()
	c := &Controller{
		client:     ctx.Client,
		recorder:   ctx.Recorder(component),
		log:        ctx.Log.With("controller", name),
		clock:      ctx.Clock,
		dsLister:   apps.DaemonSets().Lister(),
		history:    history.NewHistory(ctx.Client, apps.ControllerRevisions().Lister()),
		nodeLister: core.Nodes().Lister(),
		podIndexer: core.Pods().Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
		),
		exp:  controller.NewExpectations(ctx.Clock),
		done: make(chan struct{}),
	}
	c.failedPods = flowcontrol.NewBackOff(failedPodBackoffInitial, failedPodBackoffMax)
	c.failedPods.Clock = ctx.Clock
	c.delay = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	if err := addIndex(core.Pods().Informer(), podOwnerIndex, indexPodByOwner); err != nil {
		c.log.Error("pods cannot be looked up by owner", "err", err)
	}
	c.addHandlers(apps.DaemonSets().Informer(), apps.ControllerRevisions().Informer(), core.Pods().Informer(), core.Nodes().Informer())
	return c
}

// Start waits for the informer caches, then syncs DaemonSets until ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.collectBackoff(ctx)
	}()
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: workers, Synced: c.synced, Log: c.log})
}

// collectBackoff forgets the failed-pod delays of nodes that have been
// quiet for a while.
func (c *Controller) collectBackoff(ctx context.Context) {
	t := c.clock.NewTicker(backoffGCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.failedPods.GC()
		}
	}
}

// resolve returns the DaemonSet ref points to, if it still exists with the
// same UID.
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	return controller.ResolveControllerRef(ref, controllerKind.Kind, c.dsLister.DaemonSets(namespace).Get)
}

// selecting returns the DaemonSets of obj's namespace whose selector
// matches its labels.
func (c *Controller) selecting(obj metav1.Object) []*appsv1.DaemonSet {
	if len(obj.GetLabels()) == 0 {
		return nil
	}
	all, err := c.dsLister.DaemonSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.DaemonSet
	for _, ds := range all {
		if sel, err := selectorOf(ds); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, ds)
		}
	}
	if len(out) > 1 {
		c.log.Info("more than one DaemonSet selects the object; only its controller manages it",
			"object", obj.GetNamespace()+"/"+obj.GetName(), "count", len(out))
	}
	return out
}

func (c *Controller) enqueue(ds *appsv1.DaemonSet) {
	c.queue.Add(controller.Key(ds))
}

// selectorOf returns ds's pod selector; an empty one selects nothing.
func selectorOf(ds *appsv1.DaemonSet) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("daemonset %s: invalid selector: %w", controller.Key(ds), err)
	}
	if sel.Empty() {
		return labels.Nothing(), nil
	}
	return sel, nil
}
