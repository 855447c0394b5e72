package cronjob

import (
	"context"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs.
	name = "cronjob"
	// component is the source of the events it records.
	component = "cronjob-controller"
	// workers is upstream's --concurrent-cron-job-syncs default.
	workers = 5
)

// Controller creates the jobs of cron jobs at their schedule times.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.PassiveClock
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	delay    *controller.Delayer
	done     chan struct{}
}

// New builds the controller from ctx and registers its handlers on the
// shared CronJob and Job informers; the caller starts the informer factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	cronJobs := ctx.Informers.Batch().V1().CronJobs()
	jobs := ctx.Informers.Batch().V1().Jobs()
	c := &Controller{
		client:   ctx.Client,
		recorder: ctx.Recorder(component),
		log:      ctx.Log.With("controller", name),
		clock:    ctx.Clock,
		cronJobs: cronJobs.Lister(),
		jobs:     jobs.Lister(),
		synced:   []cache.InformerSynced{cronJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
		),
		done: make(chan struct{}),
	}
	c.delay = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	cronJobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.EnqueueKey(c.queue.Add),
		UpdateFunc: c.cronJobUpdated,
		DeleteFunc: controller.EnqueueKey(c.queue.Add),
	})
	jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.jobChanged,
		UpdateFunc: c.jobUpdated,
		DeleteFunc: c.jobChanged,
	})
	return c
}

// Start waits for the informer caches, then syncs cron jobs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: workers, Synced: c.synced, Log: c.log})
}

func (c *Controller) enqueue(cj *batchv1.CronJob) { c.queue.Add(controller.Key(cj)) }

// cronJobUpdated syncs the cron job now, unless only its schedule or time
// zone changed: then at its next start time under the new schedule, so that
// a change is not taken for a missed start.
func (c *Controller) cronJobUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*batchv1.CronJob)
	cur, ok2 := newObj.(*batchv1.CronJob)
	if !ok1 || !ok2 {
		return
	}
	if old.Spec.Schedule == cur.Spec.Schedule && equalZone(old.Spec.TimeZone, cur.Spec.TimeZone) {
		c.enqueue(cur)
		return
	}
	sched, err := parseSchedule(cur)
	if err != nil {
		c.enqueue(cur) // the sync reports the schedule
		return
	}
	now := c.clock.Now()
	if wake, ok := nextWakeUp(cur, now, sched); ok {
		c.delay.After(controller.Key(cur), wake.Sub(now))
	}
}

func equalZone(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// jobChanged syncs the cron job that controls the job.
func (c *Controller) jobChanged(obj interface{}) {
	job, ok := controller.ObjectFrom[*batchv1.Job](obj)
	if !ok {
		return
	}
	if cj := c.owner(job.Namespace, metav1.GetControllerOfNoCopy(job)); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) jobUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*batchv1.Job)
	cur, ok2 := newObj.(*batchv1.Job)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		c.jobChanged(old)
	}
	c.jobChanged(cur)
}

// owner returns the cron job ref points to, if it still exists with that UID.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *batchv1.CronJob {
	if ref == nil {
		return nil
	}
	return controller.ResolveControllerRef(ref, cronJobKind.Kind, c.cronJobs.CronJobs(namespace).Get)
}
