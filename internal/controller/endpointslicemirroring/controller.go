// Package endpointslicemirroring mirrors Endpoints into EndpointSlices, as
// upstream's endpointslicemirroring controller does: for every Endpoints
// whose Service exists and has no selector (so nothing else writes its
// slices), it keeps slices with the Endpoints' addresses and ports, one per
// canonical subset and address family, labelled
// kubernetes.io/service-name=NAME and managed-by
// endpointslicemirroring-controller.k8s.io, and owned by the Endpoints.
// Endpoints labelled endpointslice.kubernetes.io/skip-mirror=true (orch's
// own default/kubernetes) and leader-election records are left alone. When
// the Endpoints or the Service goes, or the Service gains a selector, the
// mirrored slices are deleted.
package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// managedBy is the value of endpointslice.kubernetes.io/managed-by on the
// slices this controller keeps (upstream's, so tools recognise them).
const managedBy = "endpointslicemirroring-controller.k8s.io"

// Controller keeps the mirrored EndpointSlices of Endpoints.
type Controller struct {
	client    kubernetes.Interface
	endpoints corelisters.EndpointsLister
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	// exp holds, per Endpoints key, the slice creations and deletions not
	// yet seen in the informer, so its lag never makes a sync act twice.
	exp      *controller.Expectations
	recorder record.EventRecorder
	log      *slog.Logger
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	f := ctx.Informers
	c := &Controller{
		client:    ctx.Client,
		endpoints: f.Core().V1().Endpoints().Lister(),
		services:  f.Core().V1().Services().Lister(),
		slices:    f.Discovery().V1().EndpointSlices().Lister(),
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		exp:       controller.NewExpectations(ctx.Clock),
		recorder:  ctx.Recorder("endpoint-slice-mirroring-controller"),
		log:       ctx.Log.With("controller", "endpointslicemirroring"),
	}
	f.Core().V1().Endpoints().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onEndpoints,
		UpdateFunc: func(old, cur any) {
			o, _ := controller.ObjectFrom[*corev1.Endpoints](old)
			if n, ok := controller.ObjectFrom[*corev1.Endpoints](cur); ok && (shouldMirror(n) || shouldMirror(o)) {
				c.queue.Add(controller.Key(n))
			}
		},
		DeleteFunc: c.onEndpoints,
	})
	f.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onService,
		UpdateFunc: func(old, cur any) {
			o, _ := controller.ObjectFrom[*corev1.Service](old)
			n, ok := controller.ObjectFrom[*corev1.Service](cur)
			if ok && o != nil && (o.Spec.Selector == nil) != (n.Spec.Selector == nil) {
				c.queue.Add(controller.Key(n))
			}
		},
		DeleteFunc: c.onService,
	})
	f.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s, ok := mirrored(obj); ok {
				c.exp.CreationObserved(endpointsKey(s))
				c.queue.Add(endpointsKey(s))
			}
		},
		// Labels changed by someone else (the managed-by or service-name
		// label) queue both the slice's old and new Endpoints.
		UpdateFunc: func(old, cur any) {
			for _, obj := range []any{old, cur} {
				if s, ok := mirrored(obj); ok {
					c.queue.Add(endpointsKey(s))
				}
			}
		},
		DeleteFunc: func(obj any) {
			if s, ok := mirrored(obj); ok {
				c.exp.DeletionObserved(endpointsKey(s), s.Name)
				c.queue.Add(endpointsKey(s))
			}
		},
	})
	c.synced = []cache.InformerSynced{
		f.Core().V1().Endpoints().Informer().HasSynced, f.Core().V1().Services().Informer().HasSynced,
		f.Discovery().V1().EndpointSlices().Informer().HasSynced,
	}
	return c
}

func (c *Controller) onEndpoints(obj any) {
	if ep, ok := controller.ObjectFrom[*corev1.Endpoints](obj); ok && shouldMirror(ep) {
		c.queue.Add(controller.Key(ep))
	}
}

// onService queues the Endpoints of a selector-less Service that comes or
// goes (a selector gained or lost is an update).
func (c *Controller) onService(obj any) {
	if svc, ok := controller.ObjectFrom[*corev1.Service](obj); ok && svc.Spec.Selector == nil {
		c.queue.Add(controller.Key(svc))
	}
}

// mirrored returns obj as a slice this controller keeps.
func mirrored(obj any) (*discoveryv1.EndpointSlice, bool) {
	s, ok := controller.ObjectFrom[*discoveryv1.EndpointSlice](obj)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != managedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
		return nil, false
	}
	return s, true
}

// endpointsKey is the key of the Endpoints a mirrored slice belongs to.
func endpointsKey(s *discoveryv1.EndpointSlice) string {
	return s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, c.sync, worker.Options{Workers: 5, MaxRetries: 15, Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, key string) (worker.Result, error) {
	if !c.exp.Satisfied(key) {
		// Our last creates or deletes have not reached the informer; their
		// events queue the key again. The timeout covers a lost event.
		return worker.Result{After: controller.ExpectationsTimeout}, nil
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return worker.Result{}, nil // not a key we produce
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: managedBy}))
	if err != nil {
		return worker.Result{}, err
	}
	ep, err := c.wanted(ns, name)
	if err != nil {
		return worker.Result{}, err
	}
	var desired []*discoveryv1.EndpointSlice
	if ep != nil {
		var sk skipped
		desired, sk = desiredSlices(ep)
		c.report(ep, sk)
	}
	return worker.Result{}, c.apply(ctx, key, ep, plan(desired, existing))
}

// wanted returns the Endpoints ns/name if it is to be mirrored: it asks for
// it, and its Service exists and has no selector. Otherwise it returns nil
// (its slices are to go).
func (c *Controller) wanted(ns, name string) (*corev1.Endpoints, error) {
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !shouldMirror(ep)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && svc.Spec.Selector != nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// report records on the Endpoints the addresses it could not mirror.
func (c *Controller) report(ep *corev1.Endpoints, sk skipped) {
	if sk.invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "InvalidIPAddress",
			"%d addresses are not valid IP addresses and were not mirrored to EndpointSlices", sk.invalid)
	}
	if sk.tooMany > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "TooManyAddressesToMirror",
			"%d addresses were not mirrored to EndpointSlices: at most %d of each subset are", sk.tooMany, maxEndpointsPerSubset)
	}
}

// apply makes the changes, expecting to see its creates and deletes in the
// informer before the key is synced again; it goes on past a failure and
// returns them all. ep is nil when every slice goes; no slice is created
// for Endpoints being deleted.
func (c *Controller) apply(ctx context.Context, key string, ep *corev1.Endpoints, ch changes) error {
	if ep != nil && ep.DeletionTimestamp != nil {
		ch.create = nil
	}
	deletes := make([]string, 0, len(ch.delete))
	for _, s := range ch.delete {
		deletes = append(deletes, s.Name)
	}
	c.exp.Expect(key, len(ch.create), deletes)
	slices := c.client.DiscoveryV1().EndpointSlices
	var errs []error
	for _, s := range ch.create {
		if _, err := slices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			c.exp.CreationObserved(key) // it will never be seen
			if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				errs = append(errs, fmt.Errorf("create an EndpointSlice mirroring Endpoints %s: %w", key, err))
			}
		}
	}
	for _, s := range ch.update {
		if _, err := slices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("update EndpointSlice %s mirroring Endpoints %s: %w", s.Name, key, err))
		}
	}
	for _, s := range ch.delete {
		if err := slices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			c.exp.DeletionObserved(key, s.Name)
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete EndpointSlice %s mirrored from Endpoints %s: %w", s.Name, key, err))
			}
		}
	}
	return errors.Join(errs...)
}
