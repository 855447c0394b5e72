// Package clusterdns keeps the EndpointSlice of the cluster DNS Service,
// kube-system/kube-dns. orch has no DNS pods: every agent answers DNS
// itself on its pod network's gateway address (the first address of the
// node's spec.podCIDR). The controller lists one endpoint per node that
// has a podCIDR, on that address, with the node's name and its Ready
// condition; the Service's internalTrafficPolicy Local then sends every
// query to the resolver of the node it came from.
package clusterdns

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/cidr"
	"orch/internal/controller"
	"orch/internal/dns"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "clusterdns"

// ServiceName is the cluster DNS Service's name, in kube-system, as
// upstream's.
const ServiceName = "kube-dns"

// ManagedBy is the endpointslice.kubernetes.io/managed-by of the slice.
const ManagedBy = "clusterdns.orch.io"

// ServicePorts are kube-dns's ports, with upstream's names.
func ServicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: dns.Port, TargetPort: intstr.FromInt32(dns.Port)},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: dns.Port, TargetPort: intstr.FromInt32(dns.Port)},
		{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: dns.MetricsPort, TargetPort: intstr.FromInt32(dns.MetricsPort)},
	}
}

// key is the one workqueue key: the slice is rebuilt from all nodes.
const key = metav1.NamespaceSystem + "/" + ServiceName

// Controller keeps kube-dns's EndpointSlice.
type Controller struct {
	log    *slog.Logger
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on the shared node informer of ctx.Informers.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	nodes := ctx.Informers.Core().V1().Nodes()
	c := &Controller{
		log:    ctx.Log.With("controller", Name),
		client: ctx.Client,
		nodes:  nodes.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: ctx.Clock}),
	}
	enqueue := func(any) { c.queue.Add(key) }
	reg, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || o.Spec.PodCIDR != n.Spec.PodCIDR || controller.NodeReady(o) != controller.NodeReady(n) {
				c.queue.Add(key)
			}
		},
	})
	if err != nil {
		c.log.Error("cannot watch nodes", "err", err)
		return c
	}
	c.synced = []cache.InformerSynced{reg.HasSynced}
	return c
}

// Start runs the worker until ctx ends. The slice is written at start and
// whenever a node's podCIDR or readiness changes.
func (c *Controller) Start(ctx context.Context) error {
	c.queue.Add(key)
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, _ string) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	want := Slice(nodes)
	slices := c.client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	current, err := slices.Get(ctx, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = slices.Create(ctx, want, metav1.CreateOptions{FieldManager: Name})
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(current.Endpoints, want.Endpoints) && apiequality.Semantic.DeepEqual(current.Ports, want.Ports) &&
		current.Labels[discoveryv1.LabelServiceName] == ServiceName {
		return nil
	}
	current = current.DeepCopy()
	current.Labels, current.Endpoints, current.Ports, current.AddressType = want.Labels, want.Endpoints, want.Ports, want.AddressType
	_, err = slices.Update(ctx, current, metav1.UpdateOptions{FieldManager: Name})
	return err
}

// Slice is kube-dns's EndpointSlice for nodes: an endpoint per node with
// an IPv4 podCIDR, at its gateway address, sorted by node name.
func Slice(nodes []*corev1.Node) *discoveryv1.EndpointSlice {
	var endpoints []discoveryv1.Endpoint
	for _, n := range nodes {
		gw, err := cidr.GatewayIP(n.Spec.PodCIDR)
		if err != nil || !gw.Is4() {
			continue
		}
		ready := controller.NodeReady(n)
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{gw.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready, Terminating: new(bool)},
			NodeName:   &n.Name,
		})
	}
	slices.SortFunc(endpoints, func(a, b discoveryv1.Endpoint) int {
		return strings.Compare(*a.NodeName, *b.NodeName)
	})
	var ports []discoveryv1.EndpointPort
	for _, p := range ServicePorts() {
		ports = append(ports, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &p.Port})
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: ManagedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       ports,
	}
}
