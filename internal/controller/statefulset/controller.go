package statefulset

import (
	"context"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/controller/history"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs and of its queue.
	name = "statefulset"
	// component is the source of its events.
	component = "statefulset-controller"
	// workers is upstream's --concurrent-statefulset-syncs default.
	workers = 5
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Controller is the StatefulSet controller.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.WithTicker
	sets     appslisters.StatefulSetLister
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	history  history.History
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	delay    *controller.Delayer
	writes   *writes
	done     chan struct{}
}

// New builds the controller from ctx and registers its event handlers on
// the shared StatefulSet and pod informers (and asks for the claim and
// ControllerRevision informers it reads); the caller starts the factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	setInformer := ctx.Informers.Apps().V1().StatefulSets()
	podInformer := ctx.Informers.Core().V1().Pods()
	claimInformer := ctx.Informers.Core().V1().PersistentVolumeClaims()
	revInformer := ctx.Informers.Apps().V1().ControllerRevisions()
	c := &Controller{
		client:   ctx.Client,
		recorder: ctx.Recorder(component),
		log:      ctx.Log.With("controller", name),
		clock:    ctx.Clock,
		sets:     setInformer.Lister(),
		pods:     podInformer.Lister(),
		claims:   claimInformer.Lister(),
		history:  history.NewHistory(ctx.Client, revInformer.Lister()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
		),
		done: make(chan struct{}),
	}
	c.delay = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	c.writes = newWrites(map[string]rvSource{
		resPods:         podInformer.Informer().GetStore(),
		resClaims:       claimInformer.Informer().GetStore(),
		resStatefulSets: setInformer.Informer().GetStore(),
	})
	c.synced = []cache.InformerSynced{
		setInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
		claimInformer.Informer().HasSynced, revInformer.Informer().HasSynced,
	}
	setInformer.Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	})
	return c
}

// Start waits for the informer caches, then runs the workers until ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: workers, Synced: c.synced, Log: c.log})
}

func (c *Controller) enqueue(set *appsv1.StatefulSet) { c.queue.Add(controller.Key(set)) }

func (c *Controller) podAdded(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.podDeleted(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if set := c.resolve(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
		return
	}
	for _, set := range c.selecting(pod) {
		c.enqueue(set)
	}
}

func (c *Controller) podUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !equalRefs(curRef, oldRef)
	if refChanged && oldRef != nil {
		if set := c.resolve(old.Namespace, oldRef); set != nil {
			c.enqueue(set)
		}
	}
	if curRef != nil {
		set := c.resolve(cur.Namespace, curRef)
		if set == nil {
			return
		}
		c.enqueue(set)
		// A pod that just became ready becomes available minReadySeconds
		// later; nothing else will say so.
		if !controller.PodReady(old) && controller.PodReady(cur) && set.Spec.MinReadySeconds > 0 {
			c.delay.After(controller.Key(set), time.Duration(set.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if refChanged || !labels.Equals(old.Labels, cur.Labels) {
		for _, set := range c.selecting(cur) {
			c.enqueue(set)
		}
	}
}

func (c *Controller) podDeleted(obj interface{}) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if set := c.resolve(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
	}
}

// resolve returns the set ref points to, if it still exists with that UID.
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	return controller.ResolveControllerRef(ref, controllerKind.Kind, c.sets.StatefulSets(namespace).Get)
}

// selecting returns the sets whose selector matches the orphan pod.
func (c *Controller) selecting(pod *corev1.Pod) []*appsv1.StatefulSet {
	sets, err := c.sets.GetPodStatefulSets(pod)
	if err != nil {
		return nil
	}
	if len(sets) > 1 {
		c.log.Info("more than one StatefulSet selects the pod; only its controller manages it", "pod", pod.Namespace+"/"+pod.Name, "count", len(sets))
	}
	return sets
}

func equalRefs(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UID == b.UID && a.Name == b.Name && a.Kind == b.Kind && a.APIVersion == b.APIVersion
}
