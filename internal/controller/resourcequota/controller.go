// Package resourcequota keeps status.hard and status.used of every
// ResourceQuota up to date, as upstream's resource quota controller does
// (counts of any resource, cpu/memory/ephemeral-storage requests and
// limits, extended resources and huge pages, storage requests, per
// storage class too; the scopes of internal/quota). Enforcement at
// admission is the apiserver's job.
package resourcequota

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/quota"
	"orch/internal/worker"
)

// countersRetry is how soon a namespace is synced again while the
// informer of a resource its quotas count is still listing.
const countersRetry = 200 * time.Millisecond

// resyncPeriod is how often every quota is recounted, as upstream's
// resource-quota-sync-period: what admission charged for an object whose
// write then failed is given back then.
const resyncPeriod = 5 * time.Minute

// Controller updates quota status per namespace.
type Controller struct {
	client      kubernetes.Interface
	quotas      corelisters.ResourceQuotaLister
	pods        corelisters.PodLister
	services    corelisters.ServiceLister
	configMaps  corelisters.ConfigMapLister
	secrets     corelisters.SecretLister
	claims      corelisters.PersistentVolumeClaimLister
	controllers corelisters.ReplicationControllerLister
	counters    *counters
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	log         *slog.Logger
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	core := ctx.Informers.Core().V1()
	c := &Controller{
		client: ctx.Client, quotas: core.ResourceQuotas().Lister(), pods: core.Pods().Lister(), services: core.Services().Lister(),
		configMaps: core.ConfigMaps().Lister(), secrets: core.Secrets().Lister(), claims: core.PersistentVolumeClaims().Lister(),
		controllers: core.ReplicationControllers().Lister(),
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		log:         ctx.Log.With("controller", "resourcequota"),
	}
	c.counters = &counters{client: ctx.Metadata, enqueue: c.enqueue,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(ctx.Client.Discovery()))}
	// A quota is recounted when it changes, and, as upstream's
	// replenishment, when what its namespace holds may use less: an
	// object deleted, a pod finished or being deleted, a service of
	// another type, a claim resized. Creates are not recounted: admission
	// charged them, and a recount from informers that have not seen the
	// latest creates would take that back and let the next one through.
	// A quota's own status writes (admission's charges among them) are no
	// reason to recount: only a new quota or a changed spec is.
	quotaHandler := cache.ResourceEventHandlerFuncs{AddFunc: c.enqueue, UpdateFunc: func(old, obj any) {
		before, _ := old.(*corev1.ResourceQuota)
		if q, ok := obj.(*corev1.ResourceQuota); !ok || before == nil || !apiequality.Semantic.DeepEqual(before.Spec, q.Spec) {
			c.enqueue(obj)
		}
	}}
	replenish := cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue, UpdateFunc: func(old, obj any) {
		if releases(old, obj) {
			c.enqueue(obj)
		}
	}}
	core.ResourceQuotas().Informer().AddEventHandler(quotaHandler)
	c.synced = append(c.synced, core.ResourceQuotas().Informer().HasSynced)
	for _, informer := range []cache.SharedIndexInformer{
		core.Pods().Informer(), core.Services().Informer(), core.ConfigMaps().Informer(),
		core.Secrets().Informer(), core.PersistentVolumeClaims().Informer(), core.ReplicationControllers().Informer(),
	} {
		informer.AddEventHandler(replenish)
		c.synced = append(c.synced, informer.HasSynced)
	}
	return c
}

// releases reports whether an update may lower what an object uses of a
// quota (upstream's replenishment on update).
func releases(old, obj any) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		before, _ := old.(*corev1.Pod)
		counted := func(p *corev1.Pod) bool {
			return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		}
		return before != nil && counted(before) && !counted(o)
	case *corev1.Service:
		before, _ := old.(*corev1.Service)
		return before != nil && (before.Spec.Type != o.Spec.Type || len(before.Spec.Ports) != len(o.Spec.Ports))
	case *corev1.PersistentVolumeClaim:
		before, _ := old.(*corev1.PersistentVolumeClaim)
		return before != nil && !apiequality.Semantic.DeepEqual(before.Spec.Resources.Requests, o.Spec.Resources.Requests)
	}
	return false
}

// enqueue queues the namespace of any changed object that has quotas.
func (c *Controller) enqueue(obj any) {
	m, ok := controller.ObjectFrom[metav1.Object](obj)
	if !ok {
		return
	}
	if quotas, _ := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything()); len(quotas) > 0 {
		c.queue.Add(m.GetNamespace())
	}
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.counters.start(ctx)
	go c.resyncEvery(ctx, resyncPeriod)
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, ns string) error {
	quotas, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
	if err != nil || len(quotas) == 0 {
		return err
	}
	all := labels.Everything()
	var o quota.Objects
	pods, _ := c.pods.Pods(ns).List(all)
	o.Services, _ = c.services.Services(ns).List(all)
	cms, _ := c.configMaps.ConfigMaps(ns).List(all)
	secrets, _ := c.secrets.Secrets(ns).List(all)
	o.Claims, _ = c.claims.PersistentVolumeClaims(ns).List(all)
	rcs, _ := c.controllers.ReplicationControllers(ns).List(all)
	o.ConfigMaps, o.Secrets, o.Controllers, o.Quotas = len(cms), len(secrets), len(rcs), len(quotas)
	for _, q := range quotas {
		counts, ready, err := c.counters.counts(q.Spec.Hard, ns)
		if err != nil {
			return err
		}
		if !ready { // an informer of counted objects is still listing
			c.queue.AddAfter(ns, countersRetry)
			return nil
		}
		scoped := o
		scoped.Counts = counts
		scoped.Pods = nil
		for _, p := range pods {
			if quota.PodMatches(p, q.Spec) {
				scoped.Pods = append(scoped.Pods, p)
			}
		}
		status := corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: quota.Usage(q.Spec.Hard, scoped)}
		if apiequality.Semantic.DeepEqual(q.Status, status) {
			continue
		}
		updated := q.DeepCopy()
		updated.Status = status
		if _, err := c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// resyncEvery queues every namespace with quotas each period until ctx ends.
func (c *Controller) resyncEvery(ctx context.Context, period time.Duration) {
	wait.UntilWithContext(ctx, func(context.Context) {
		quotas, _ := c.quotas.List(labels.Everything())
		for _, q := range quotas {
			c.queue.Add(q.Namespace)
		}
	}, period)
}
