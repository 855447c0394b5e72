// Package gateway writes the status of orch's Gateway API objects: its
// GatewayClasses are Accepted, its Gateways get the nodes' addresses (the
// same as servicelb gives Ingresses) and their listeners' conditions and
// attached route counts, and HTTPRoutes get one parent status per orch
// Gateway they name. What is attached is decided by internal/gateway's
// Build, the same function every agent serves from (a node that cannot
// open a listener's port, or has an Ingress port of the other protocol
// there, logs it; the status cannot say). The controller waits until the
// Gateway API definitions are served (`orch server --gateway-api`
// installs them).
package gateway

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"orch/internal/controller"
	"orch/internal/controller/servicelb"
	"orch/internal/gateway"
	"orch/internal/routing"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "gateway"

// Controller keeps the status of orch's Gateway API objects.
type Controller struct {
	log        *slog.Logger
	client     kubernetes.Interface
	gw         gwclient.Interface
	clock      clock.Clock
	services   corelisters.ServiceLister
	namespaces corelisters.NamespaceLister
	nodes      corelisters.NodeLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	handler    cache.ResourceEventHandler
}

// key is the one queue item: every change recomputes everything.
const key = "all"

// New builds the controller; Services, Namespaces and Nodes come from
// ctx.Informers, the Gateway API objects and TLS Secrets from its own
// informers, started once the definitions are served.
func New(ctx controller.Context, gw gwclient.Interface) *Controller {
	ctx = ctx.WithDefaults()
	c := &Controller{log: ctx.Log.With("controller", Name), client: ctx.Client, gw: gw, clock: ctx.Clock,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: ctx.Clock})}
	c.handler = cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(key) },
		UpdateFunc: func(any, any) { c.queue.Add(key) },
		DeleteFunc: func(any) { c.queue.Add(key) },
	}
	svcs, nss, nodes := ctx.Informers.Core().V1().Services(), ctx.Informers.Core().V1().Namespaces(), ctx.Informers.Core().V1().Nodes()
	c.services, c.namespaces, c.nodes = svcs.Lister(), nss.Lister(), nodes.Lister()
	for _, inf := range []cache.SharedIndexInformer{svcs.Informer(), nss.Informer(), nodes.Informer()} {
		reg, err := inf.AddEventHandler(c.handler)
		if err != nil {
			c.log.Error("cannot watch", "err", err)
			continue
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c
}

// Start waits for the Gateway API definitions, then keeps the status
// until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !gateway.WaitServed(ctx, c.client.Discovery(), 10*time.Second) {
		return nil
	}
	f := gwinformers.NewSharedInformerFactory(c.gw, 0)
	sf := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "type=" + string(v1.SecretTypeTLS)
	}))
	gl, synced, err := gateway.Follow(f, c.handler)
	if err != nil {
		return err
	}
	secrets := sf.Core().V1().Secrets()
	reg, err := secrets.Informer().AddEventHandler(c.handler)
	if err != nil {
		return err
	}
	synced = append(append(synced, reg.HasSynced), c.synced...)
	l := &listers{Listers: gl, secrets: secrets.Lister()}
	f.StartWithContext(ctx)
	sf.StartWithContext(ctx)
	defer f.Shutdown()
	defer sf.Shutdown()
	c.queue.Add(key)
	return worker.Run(ctx, c.queue, worker.Errors(func(ctx context.Context, _ string) error { return c.sync(ctx, l) }),
		worker.Options{Workers: 1, Synced: synced, Log: c.log})
}

// listers are the Gateway API objects' listers and the TLS Secrets'.
type listers struct {
	*gateway.Listers
	secrets corelisters.SecretLister
}

// sync computes everything and writes the status that changed.
func (c *Controller) sync(ctx context.Context, l *listers) error {
	in := gateway.Input{Secrets: map[string]*v1.Secret{}}
	if err := l.Fill(&in); err != nil {
		return err
	}
	var err error
	if in.Namespaces, err = c.namespaces.List(labels.Everything()); err != nil {
		return err
	}
	secrets, err := l.secrets.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range secrets {
		in.Secrets[s.Namespace+"/"+s.Name] = s
	}
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return err
	}
	in.Services = routing.NewServices(svcs, nil)
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	res := gateway.Build(in)
	w := &writer{c: c, now: c.clock.Now()}
	return w.write(ctx, in, res, servicelb.Addresses(nodes))
}
