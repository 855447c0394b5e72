package deployment

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs and the queue's name.
	name = "deployment"
	// workers is upstream's --concurrent-deployment-syncs default.
	workers = 5
	// maxRetries is how many times in a row a failing Deployment is retried
	// (with backoff, 5 ms doubling) before it waits for the next event.
	maxRetries = 15
	// podOwnerIndex indexes pods by their controller (namespace, kind,
	// name, UID); pods without a controller by namespace alone.
	podOwnerIndex = "orch.deployment/pod-controller"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the Deployment controller.
type Controller struct {
	client     kubernetes.Interface
	recorder   record.EventRecorder
	log        *slog.Logger
	clock      clock.Clock
	dLister    appslisters.DeploymentLister
	rsLister   appslisters.ReplicaSetLister
	podIndexer cache.Indexer
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	delay      *controller.Delayer
	done       chan struct{}
}

// New builds the controller from ctx and registers its event handlers on
// the shared Deployment, ReplicaSet and pod informers; the caller starts
// the informer factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	c := &Controller{
		client:   ctx.Client,
		recorder: ctx.Recorder("deployment-controller"),
		log:      ctx.Log.With("controller", name),
		clock:    ctx.Clock,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
		),
		done: make(chan struct{}),
	}
	c.delay = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	deployments := ctx.Informers.Apps().V1().Deployments()
	replicaSets := ctx.Informers.Apps().V1().ReplicaSets()
	pods := ctx.Informers.Core().V1().Pods()
	c.dLister, c.rsLister = deployments.Lister(), replicaSets.Lister()
	c.podIndexer = pods.Informer().GetIndexer()
	if _, ok := c.podIndexer.GetIndexers()[podOwnerIndex]; !ok {
		if err := pods.Informer().AddIndexers(cache.Indexers{podOwnerIndex: indexPodByOwner}); err != nil {
			c.log.Error("pods cannot be looked up by owner (build the controllers before starting the informer factory)", "err", err)
		}
	}
	deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.deploymentChanged,
		UpdateFunc: func(_, cur interface{}) { c.deploymentChanged(cur) },
		DeleteFunc: c.deploymentChanged,
	})
	replicaSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.replicaSetAdded,
		UpdateFunc: c.replicaSetUpdated,
		DeleteFunc: c.replicaSetDeleted,
	})
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted})
	c.synced = []cache.InformerSynced{deployments.Informer().HasSynced, replicaSets.Informer().HasSynced, pods.Informer().HasSynced}
	return c
}

// Start waits for the informer caches, then runs the workers until ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Workers: workers, Synced: c.synced, MaxRetries: maxRetries, Log: c.log})
}

// reconcile syncs the Deployment of key. A namespace being deleted refuses
// the ReplicaSets a sync would create: nothing to retry then.
func (c *Controller) reconcile(ctx context.Context, key string) (worker.Result, error) {
	start := c.clock.Now()
	defer func() { c.log.Debug("synced", "deployment", key, "took", c.clock.Since(start)) }()
	err := c.sync(ctx, key)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return worker.Result{}, nil
	}
	return worker.Result{}, err
}

// writeStatus writes d's status (and the revision annotation, which
// upstream's apiserver accepts on the status subresource of Deployments) and
// keeps d's resourceVersion current for the next write of this sync.
func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	d.ResourceVersion = updated.ResourceVersion
	want, ok := d.Annotations[revisionAnnotation]
	if !ok || updated.Annotations[revisionAnnotation] == want {
		return nil
	}
	// This apiserver kept the annotations as they were: set the revision
	// with a patch of its own.
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, revisionAnnotation, want)
	patched, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	d.ResourceVersion = patched.ResourceVersion
	return nil
}
