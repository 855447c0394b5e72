package pvbinder

import (
	"context"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// component is upstream's event source for this controller.
const component = "persistentvolume-controller"

// Queue keys are "claim/NAMESPACE/NAME" and "volume/NAME".
const (
	claimPrefix  = "claim/"
	volumePrefix = "volume/"
)

// Controller binds PersistentVolumeClaims to PersistentVolumes.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	pvs      corelisters.PersistentVolumeLister
	claims   corelisters.PersistentVolumeClaimLister
	classes  storagelisters.StorageClassLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its informers on ctx.Informers.
func New(ctx controller.Context) *Controller {
	core := ctx.Informers.Core().V1()
	classes := ctx.Informers.Storage().V1().StorageClasses()
	c := &Controller{
		client: ctx.Client, recorder: ctx.Recorder(component), log: ctx.Log.With("controller", "pvbinder"),
		pvs: core.PersistentVolumes().Lister(), claims: core.PersistentVolumeClaims().Lister(),
		classes: classes.Lister(), pods: core.Pods().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvbinder"}),
	}
	core.PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.claimChanged, UpdateFunc: func(_, o any) { c.claimChanged(o) }, DeleteFunc: c.claimDeleted,
	})
	core.PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.volumeChanged, UpdateFunc: func(_, o any) { c.volumeChanged(o) }, DeleteFunc: c.volumeDeleted,
	})
	classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueuePendingClaims() }, UpdateFunc: func(_, _ any) { c.enqueuePendingClaims() },
	})
	core.Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged, UpdateFunc: func(_, o any) { c.podChanged(o) },
	})
	for _, informer := range []cache.SharedIndexInformer{core.PersistentVolumes().Informer(), core.PersistentVolumeClaims().Informer(),
		classes.Informer(), core.Pods().Informer()} {
		c.synced = append(c.synced, informer.HasSynced)
	}
	return c
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, volumePrefix); ok {
		return c.syncVolumeByName(ctx, name)
	}
	return c.syncClaimByKey(ctx, strings.TrimPrefix(key, claimPrefix))
}

func (c *Controller) claimChanged(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(claimPrefix + key)
	}
}

// claimDeleted re-checks the volume the claim was bound to: it may have to
// be released and reclaimed.
func (c *Controller) claimDeleted(obj any) {
	if claim, ok := controller.ObjectFrom[*corev1.PersistentVolumeClaim](obj); ok && claim.Spec.VolumeName != "" {
		c.queue.Add(volumePrefix + claim.Spec.VolumeName)
	}
}

// volumeChanged syncs the volume, and the claims still waiting (a new or
// freed volume may fit them).
func (c *Controller) volumeChanged(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	c.queue.Add(volumePrefix + pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		c.queue.Add(claimPrefix + ref.Namespace + "/" + ref.Name)
	}
	c.enqueuePendingClaims()
}

// volumeDeleted re-checks the claim bound to it (it is lost now).
func (c *Controller) volumeDeleted(obj any) {
	if pv, ok := controller.ObjectFrom[*corev1.PersistentVolume](obj); ok && pv.Spec.ClaimRef != nil {
		c.queue.Add(claimPrefix + pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

// podChanged re-checks the unbound claims a pod uses, so their events say
// whether a pod waits for them.
func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if claim, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName); err == nil && claim.Spec.VolumeName == "" {
			c.queue.Add(claimPrefix + pod.Namespace + "/" + claim.Name)
		}
	}
}

func (c *Controller) enqueuePendingClaims() {
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		if claim.Status.Phase == corev1.ClaimPending || claim.Status.Phase == "" {
			c.queue.Add(claimPrefix + claim.Namespace + "/" + claim.Name)
		}
	}
}
