// Package servicelb is orch's built-in service load balancer, for clusters
// with no cloud: a Service of type LoadBalancer (with no
// spec.loadBalancerClass) gets the addresses of the cluster's nodes in
// status.loadBalancer.ingress, and every agent's service proxy forwards
// traffic to those addresses at the Service's ports as it does NodePorts.
//
// The nodes listed are the Ready ones without the
// node.kubernetes.io/exclude-from-external-load-balancers label, by their
// ExternalIP when they have one, else their InternalIP. With
// externalTrafficPolicy Local only nodes that run a ready endpoint of the
// Service are listed, since the others drop such traffic to keep the
// client's address. A Service that stops being a LoadBalancer loses its
// ingress. The Ingresses of the built-in Ingress controller get the same
// nodes' addresses (ingress.go).
package servicelb

import (
	"context"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "servicelb"

// ExcludeLabel keeps a node out of every load balancer, as upstream's.
const ExcludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// Workers is how many Services are synced at once.
const Workers = 2

// Controller keeps status.loadBalancer of LoadBalancer Services.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	ing      *ingresses
}

// New builds the controller on the shared informers of ctx.Informers.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	services := ctx.Informers.Core().V1().Services()
	nodes := ctx.Informers.Core().V1().Nodes()
	endpointSlices := ctx.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		log:      ctx.Log.With("controller", Name),
		client:   ctx.Client,
		services: services.Lister(),
		nodes:    nodes.Lister(),
		slices:   endpointSlices.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: ctx.Clock}),
	}
	svcReg, err1 := services.Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	nodeReg, err2 := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAll() },
		DeleteFunc: func(any) { c.enqueueAll() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || eligible(o) != eligible(n) || !slices.Equal(nodeAddresses([]*corev1.Node{o}), nodeAddresses([]*corev1.Node{n})) {
				c.enqueueAll()
			}
		},
	})
	sliceReg, err3 := endpointSlices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceChanged,
		UpdateFunc: func(_, cur any) { c.sliceChanged(cur) },
		DeleteFunc: c.sliceChanged,
	})
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			c.log.Error("cannot watch", "err", err)
			return c
		}
	}
	c.synced = []cache.InformerSynced{svcReg.HasSynced, nodeReg.HasSynced, sliceReg.HasSynced}
	c.ing = newIngresses(ctx, c)
	return c
}

func (c *Controller) enqueueAll() {
	if c.ing != nil {
		c.ing.enqueueAll() // an Ingress lists the nodes too
	}
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range all {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			c.queue.Add(controller.Key(svc))
		}
	}
}

// sliceChanged queues the Service of a changed slice: its endpoints
// choose the nodes of an externalTrafficPolicy Local balancer.
func (c *Controller) sliceChanged(obj any) {
	slice, ok := controller.ObjectFrom[*discoveryv1.EndpointSlice](obj)
	if !ok {
		return
	}
	if name := slice.Labels[discoveryv1.LabelServiceName]; name != "" {
		c.queue.Add(slice.Namespace + "/" + name)
	}
}

// Start runs the workers of Services and of Ingresses until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c.ing != nil {
			c.ing.start(ctx)
		}
	}()
	err := worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: Workers, Synced: c.synced, Log: c.log})
	<-done
	return err
}

func (c *Controller) sync(ctx context.Context, key string) error {
	svc, err := controller.Lookup(key, c.services.Services)
	if svc == nil || err != nil {
		return err
	}
	want, err := c.ingress(svc)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	svc = svc.DeepCopy()
	svc.Status.LoadBalancer.Ingress = want
	_, err = c.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{FieldManager: Name})
	if err == nil {
		c.log.Info("load balancer ingress", "service", key, "ingress", len(want))
	}
	return err
}

// ingress is what svc's status.loadBalancer.ingress should be.
func (c *Controller) ingress(svc *corev1.Service) ([]corev1.LoadBalancerIngress, error) {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if ours(svc.Status.LoadBalancer.Ingress) {
			return nil, nil
		}
		return svc.Status.LoadBalancer.Ingress, nil // another's, or none
	}
	if svc.Spec.LoadBalancerClass != nil {
		return svc.Status.LoadBalancer.Ingress, nil // another balancer's
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, func(n *corev1.Node) bool { return !eligible(n) })
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		withEndpoints, err := c.nodesWithReadyEndpoints(svc)
		if err != nil {
			return nil, err
		}
		nodes = slices.DeleteFunc(nodes, func(n *corev1.Node) bool { return !withEndpoints[n.Name] })
	}
	return Ingress(nodeAddresses(nodes)), nil
}

func (c *Controller) nodesWithReadyEndpoints(svc *corev1.Service) (map[string]bool, error) {
	list, err := c.slices.EndpointSlices(svc.Namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name}))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, s := range list {
		for _, ep := range s.Endpoints {
			if ep.NodeName != nil && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
				out[*ep.NodeName] = true
			}
		}
	}
	return out, nil
}

// Ingress is the status of a balancer on addresses: one VIP entry each.
func Ingress(addresses []string) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	vip := corev1.LoadBalancerIPModeVIP
	for _, a := range addresses {
		out = append(out, corev1.LoadBalancerIngress{IP: a, IPMode: &vip})
	}
	return out
}

// ours reports whether ingress could be this controller's: IPs only.
func ours(ingress []corev1.LoadBalancerIngress) bool {
	for _, in := range ingress {
		if in.Hostname != "" || in.IP == "" {
			return false
		}
	}
	return len(ingress) > 0
}

// eligible: a node balancers may send traffic to.
func eligible(n *corev1.Node) bool {
	_, excluded := n.Labels[ExcludeLabel]
	return !excluded && n.DeletionTimestamp == nil && controller.NodeReady(n)
}

// Addresses are the balancer addresses of the eligible nodes of nodes:
// what the built-in Ingress and Gateway controllers' status shows too.
func Addresses(nodes []*corev1.Node) []string {
	return nodeAddresses(slices.DeleteFunc(slices.Clone(nodes), func(n *corev1.Node) bool { return !eligible(n) }))
}

// nodeAddresses are the nodes' balancer addresses, sorted: each node's
// ExternalIPs, else its InternalIPs.
func nodeAddresses(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		external := addressesOf(n, corev1.NodeExternalIP)
		if len(external) == 0 {
			external = addressesOf(n, corev1.NodeInternalIP)
		}
		out = append(out, external...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func addressesOf(n *corev1.Node, t corev1.NodeAddressType) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			out = append(out, a.Address)
		}
	}
	return out
}
