package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs.
	name = "job"
	// component is the source of its events, as upstream.
	component = "job-controller"
	// workers is upstream's --concurrent-job-syncs default.
	workers = 5
	// maxPodChangesPerSync caps the creates or deletes of one sync.
	maxPodChangesPerSync = 500
	// maxUncountedPods caps status.uncountedTerminatedPods so the status
	// stays small; the rest is counted in later syncs.
	maxUncountedPods = 500
	// controllerName is the spec.managedBy value of jobs this controller
	// runs (also when unset).
	controllerName = "kubernetes.io/job-controller"
	// apiBackoff and maxAPIBackoff bound the retries of failed syncs, as
	// upstream (on the real clock: time-based re-checks go through the
	// Delayer, on the injected one).
	apiBackoff    = time.Second
	maxAPIBackoff = time.Minute
)

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller runs Jobs: it creates their pods, counts the pods that finish,
// and writes the jobs' status.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.WithTicker
	jobs     batchlisters.JobLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	// queue holds job keys; orphans holds keys of pods whose tracking
	// finalizer must go because no running job counts them.
	queue   workqueue.TypedRateLimitingInterface[string]
	orphans workqueue.TypedRateLimitingInterface[string]
	delay   *controller.Delayer
	done    chan struct{}
	exp     *expectations
	backoff *backoffStore
}

// New builds the controller from ctx and registers its handlers on the
// shared job and pod informers; the caller starts the informer factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	jobs := ctx.Informers.Batch().V1().Jobs()
	pods := ctx.Informers.Core().V1().Pods()
	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](apiBackoff, maxAPIBackoff)
	}
	c := &Controller{
		client:   ctx.Client,
		recorder: ctx.Recorder(component),
		log:      ctx.Log.With("controller", name),
		clock:    ctx.Clock,
		jobs:     jobs.Lister(),
		pods:     pods.Lister(),
		synced:   []cache.InformerSynced{jobs.Informer().HasSynced, pods.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job"}),
		orphans: workqueue.NewTypedRateLimitingQueueWithConfig(limiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job_orphan_pod"}),
		done:    make(chan struct{}),
		exp:     newExpectations(ctx.Clock),
		backoff: newBackoffStore(),
	}
	c.delay = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobAdded,
		UpdateFunc: c.jobUpdated,
		DeleteFunc: c.jobDeleted,
	})
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: func(obj interface{}) { c.podDeleted(obj, true) },
	})
	return c
}

// Start waits for the caches, then syncs jobs and orphaned pods until ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: workers, Synced: c.synced, Log: c.log})
	}()
	go func() {
		defer wg.Done()
		worker.Run(ctx, c.orphans, worker.Errors(c.syncOrphan), worker.Options{Synced: c.synced, Log: c.log.With("queue", "orphan-pods")})
	}()
	wg.Wait()
	return nil
}

// resolveControllerRef returns the job ref points to, if it still exists
// with the same UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	return controller.ResolveControllerRef(ref, jobKind.Kind, c.jobs.Jobs(namespace).Get)
}

// selecting returns the jobs of the pod's namespace whose selector matches
// its labels (candidates to adopt an orphan).
func (c *Controller) selecting(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	jobs, err := c.jobs.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, job := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, job)
		}
	}
	return out
}

func (c *Controller) enqueue(job *batchv1.Job) { c.queue.Add(controller.Key(job)) }

func (c *Controller) enqueueOrphan(pod *corev1.Pod) { c.orphans.Add(controller.Key(pod)) }
