// Package ttlafterfinished deletes finished Jobs whose
// spec.ttlSecondsAfterFinished has run out (their pods go with them through
// the garbage collector), as upstream's TTL-after-finished controller does.
package ttlafterfinished

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Controller deletes expired finished Jobs.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
	clock  clock.WithTicker
}

// New builds the controller and registers its informer.
func New(ctx controller.Context) *Controller {
	informer := ctx.Informers.Batch().V1().Jobs()
	c := &Controller{client: ctx.Client, jobs: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ttl-after-finished", Clock: ctx.Clock}),
		log: ctx.Log.With("controller", "ttlafterfinished"), clock: ctx.Clock}
	enqueue := func(obj any) {
		if job, ok := obj.(*batchv1.Job); ok && job.Spec.TTLSecondsAfterFinished != nil {
			if key, err := cache.MetaNamespaceKeyFunc(job); err == nil {
				c.queue.Add(key)
			}
		}
	}
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }})
	return c
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Synced: []cache.InformerSynced{c.synced}, Log: c.log})
}

// reconcile deletes the finished job of key once its TTL has run out, or
// looks again when it will have.
func (c *Controller) reconcile(ctx context.Context, key string) (worker.Result, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	job, err := c.jobs.Jobs(ns).Get(name)
	if err != nil || job.DeletionTimestamp != nil || job.Spec.TTLSecondsAfterFinished == nil {
		return worker.Result{}, nil
	}
	finished, ok := finishTime(job)
	if !ok {
		return worker.Result{}, nil
	}
	expiry := finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if wait := expiry.Sub(c.clock.Now()); wait > 0 {
		return worker.Result{After: wait}, nil
	}
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &job.UID, ResourceVersion: &job.ResourceVersion}})
	switch {
	case err == nil:
		c.log.Info("deleted a finished job whose TTL ran out", "job", key)
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		// Changed meanwhile (its TTL perhaps): look again.
		return worker.Result{}, fmt.Errorf("job %q changed while being deleted: %w", key, err)
	default:
		return worker.Result{}, fmt.Errorf("delete job %q: %w", key, err)
	}
	return worker.Result{}, nil
}

// finishTime is when the job got its Complete or Failed condition.
func finishTime(job *batchv1.Job) (time.Time, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
