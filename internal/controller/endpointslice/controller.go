// Package endpointslice keeps, for every Service with a selector, the
// EndpointSlices listing its pods (ready, serving and terminating conditions,
// resolved named ports, hostnames for subdomains), as upstream's
// endpointslice controller does: one set of slices per IP family of the
// Service, each listing the pods' addresses of that family. Slices carry the kubernetes.io/service-name
// label and are owned by their Service.
package endpointslice

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/worker"
)

// managedBy is the value of endpointslice.kubernetes.io/managed-by on the
// slices this controller owns (upstream's, so tools recognise them).
const managedBy = "endpointslice-controller.k8s.io"

// Controller reconciles the EndpointSlices of Services.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger
	pending  pendingWrites
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	f := ctx.Informers
	c := &Controller{
		client: ctx.Client, services: f.Core().V1().Services().Lister(), pods: f.Core().V1().Pods().Lister(),
		nodes: f.Core().V1().Nodes().Lister(), slices: f.Discovery().V1().EndpointSlices().Lister(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		log:   ctx.Log.With("controller", "endpointslice"),
	}
	f.Core().V1().Services().Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePod, UpdateFunc: func(old, obj any) { c.enqueuePod(old); c.enqueuePod(obj) }, DeleteFunc: c.enqueuePod,
	})
	f.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueueSlice(obj) }, DeleteFunc: c.enqueueSlice,
	})
	f.Core().V1().Nodes().Informer()
	c.synced = []cache.InformerSynced{
		f.Core().V1().Services().Informer().HasSynced, f.Core().V1().Pods().Informer().HasSynced,
		f.Core().V1().Nodes().Informer().HasSynced, f.Discovery().V1().EndpointSlices().Informer().HasSynced,
	}
	return c
}

// enqueuePod queues every service in the pod's namespace that selects it.
func (c *Controller) enqueuePod(obj any) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	services, _ := c.services.Services(pod.Namespace).List(labels.Everything())
	for _, svc := range services {
		if svc.Spec.Selector != nil && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			c.queue.Add(pod.Namespace + "/" + svc.Name)
		}
	}
}

func (c *Controller) enqueueSlice(obj any) {
	if slice, ok := controller.ObjectFrom[*discoveryv1.EndpointSlice](obj); ok && slice.Labels[discoveryv1.LabelManagedBy] == managedBy {
		c.queue.Add(slice.Namespace + "/" + slice.Labels[discoveryv1.LabelServiceName])
	}
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: 4, Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}))
	if err != nil {
		return err
	}
	if !c.pending.seen(key, existing) {
		// Our last writes have not reached the informer: acting now would
		// duplicate them. Look again shortly.
		c.queue.AddAfter(key, 50*time.Millisecond)
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	// As upstream: no slices for a Service without a selector, nor for an
	// ExternalName one (it has no endpoints, only a name).
	if apierrors.IsNotFound(err) || (err == nil && (svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName)) {
		return c.deleteSlices(ctx, existing)
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	desired := desiredSlices(svc, pods, c.zones())
	for i := range desired {
		desired[i].ObjectMeta = sliceMeta(svc)
	}
	reuse, stale := matchSlices(existing, desired)
	for i := range desired {
		if reuse[i] != nil {
			if err := c.update(ctx, reuse[i], &desired[i]); err != nil {
				return err
			}
			continue
		}
		created, err := c.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &desired[i], metav1.CreateOptions{})
		if err != nil {
			return err
		}
		c.pending.created(key, created.Name)
	}
	for _, s := range stale {
		c.pending.deleted(key, s.Name)
	}
	return c.deleteSlices(ctx, stale)
}

// matchSlices pairs each desired slice with an existing one of the same
// address type to update (reuse[i] is nil when desired[i] must be
// created), since a slice's address type cannot change; stale are the
// existing slices left over, to delete. Slices are taken in name order so
// that the same slices keep the same contents.
func matchSlices(existing []*discoveryv1.EndpointSlice, desired []discoveryv1.EndpointSlice) (reuse, stale []*discoveryv1.EndpointSlice) {
	sorted := slices.Clone(existing)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range sorted {
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	reuse = make([]*discoveryv1.EndpointSlice, len(desired))
	for i, want := range desired {
		if have := byType[want.AddressType]; len(have) > 0 {
			reuse[i], byType[want.AddressType] = have[0], have[1:]
		}
	}
	for _, s := range sorted {
		if !slices.Contains(reuse, s) {
			stale = append(stale, s)
		}
	}
	return reuse, stale
}

func (c *Controller) update(ctx context.Context, current, want *discoveryv1.EndpointSlice) error {
	if apiequality.Semantic.DeepEqual(current.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(current.Ports, want.Ports) &&
		apiequality.Semantic.DeepEqual(current.Labels, want.Labels) {
		return nil
	}
	updated := current.DeepCopy()
	updated.Endpoints, updated.Ports, updated.Labels = want.Endpoints, want.Ports, want.Labels
	_, err := c.client.DiscoveryV1().EndpointSlices(current.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

func (c *Controller) deleteSlices(ctx context.Context, slices []*discoveryv1.EndpointSlice) error {
	for _, s := range slices {
		err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// sliceMeta is the metadata of a slice of svc: upstream's labels (the
// service's own, plus service-name, managed-by and headless) and an owner
// reference to the service.
func sliceMeta(svc *corev1.Service) metav1.ObjectMeta {
	l := map[string]string{}
	for k, v := range svc.Labels {
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = managedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	return metav1.ObjectMeta{
		GenerateName: svc.Name + "-", Namespace: svc.Namespace, Labels: l,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}
}

func (c *Controller) zones() map[string]string {
	nodes, _ := c.nodes.List(labels.Everything())
	zones := make(map[string]string, len(nodes))
	for _, n := range nodes {
		if zone, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zones[n.Name] = zone
		}
	}
	return zones
}
