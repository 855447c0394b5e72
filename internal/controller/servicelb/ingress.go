package servicelb

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/ingress"
	"orch/internal/worker"
)

// ingresses keeps status.loadBalancer of the Ingresses the built-in
// Ingress controller serves (internal/ingress): every agent serves them on
// its node, so the status lists the nodes' addresses, as for a
// LoadBalancer Service. Ingresses of other classes are left to their
// controllers.
type ingresses struct {
	c       *Controller
	list    networkinglisters.IngressLister
	classes networkinglisters.IngressClassLister
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
}

func newIngresses(ctx controller.Context, c *Controller) *ingresses {
	ings := ctx.Informers.Networking().V1().Ingresses()
	classes := ctx.Informers.Networking().V1().IngressClasses()
	g := &ingresses{c: c, list: ings.Lister(), classes: classes.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name + "-ingress", Clock: ctx.Clock})}
	ingReg, err1 := ings.Informer().AddEventHandler(controller.EnqueueHandlers(g.queue.Add))
	all := func(any) { g.enqueueAll() }
	classReg, err2 := classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: all, DeleteFunc: all, UpdateFunc: func(any, any) { g.enqueueAll() }})
	for _, err := range []error{err1, err2} {
		if err != nil {
			c.log.Error("cannot watch", "err", err)
			return g
		}
	}
	g.synced = []cache.InformerSynced{ingReg.HasSynced, classReg.HasSynced}
	return g
}

func (g *ingresses) enqueueAll() {
	all, err := g.list.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ing := range all {
		g.queue.Add(controller.Key(ing))
	}
}

func (g *ingresses) start(ctx context.Context) error {
	return worker.Run(ctx, g.queue, worker.Errors(g.sync), worker.Options{Workers: 1, Synced: append(g.synced, g.c.synced...), Log: g.c.log})
}

func (g *ingresses) sync(ctx context.Context, key string) error {
	ing, err := controller.Lookup(key, g.list.Ingresses)
	if ing == nil || err != nil {
		return err
	}
	classes, err := g.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	if !ingress.Serves(ing, classes) {
		return nil
	}
	nodes, err := g.c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	var want []networkingv1.IngressLoadBalancerIngress
	for _, a := range Addresses(nodes) {
		want = append(want, networkingv1.IngressLoadBalancerIngress{IP: a})
	}
	if apiequality.Semantic.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = want
	_, err = g.c.client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{FieldManager: Name})
	if err == nil {
		g.c.log.Info("ingress load balancer", "ingress", key, "addresses", len(want))
	}
	return err
}
