// Package pvprotection is upstream's PV protection controller: a
// PersistentVolume being deleted keeps its kubernetes.io/pv-protection
// finalizer while it is bound to a claim, and a volume that lacks the
// finalizer gets it.
package pvprotection

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/volumeprotection"
	"orch/internal/worker"
)

// Name is the controller's name, as upstream's.
const Name = "pv-protection"

// Controller adds and removes the volumes' protection finalizer.
type Controller struct {
	client  kubernetes.Interface
	volumes corelisters.PersistentVolumeLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
}

// New builds the controller and registers its informer.
func New(ctx controller.Context) *Controller {
	volumes := ctx.Informers.Core().V1().PersistentVolumes()
	c := &Controller{client: ctx.Client, volumes: volumes.Lister(), synced: volumes.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvprotection", Clock: ctx.Clock}),
		log: ctx.Log.With("controller", Name)}
	enqueue := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && (volumeprotection.NeedsFinalizer(pv, volumeprotection.VolumeFinalizer) ||
			volumeprotection.DeletionCandidate(pv, volumeprotection.VolumeFinalizer)) {
			c.queue.Add(pv.Name)
		}
	}
	volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }})
	return c
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Synced: []cache.InformerSynced{c.synced}, Log: c.log})
}

// reconcile removes the finalizer of a volume being deleted that is no
// longer bound, and adds it to a live volume that lacks it.
func (c *Controller) reconcile(ctx context.Context, name string) (worker.Result, error) {
	pv, err := c.volumes.Get(name)
	if err != nil {
		return worker.Result{}, nil // gone
	}
	switch {
	case volumeprotection.DeletionCandidate(pv, volumeprotection.VolumeFinalizer):
		if volumeprotection.VolumeInUse(pv) {
			return worker.Result{}, nil // its phase changing brings it back
		}
		pv = pv.DeepCopy()
		volumeprotection.SetFinalizer(pv, volumeprotection.VolumeFinalizer, false)
		if _, err := c.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("remove the protection finalizer of volume %s: %w", name, err)
		}
		c.log.Info("released an unbound volume for deletion", "volume", name)
	case volumeprotection.NeedsFinalizer(pv, volumeprotection.VolumeFinalizer):
		pv = pv.DeepCopy()
		volumeprotection.SetFinalizer(pv, volumeprotection.VolumeFinalizer, true)
		if _, err := c.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("add the protection finalizer to volume %s: %w", name, err)
		}
	}
	return worker.Result{}, nil
}
