// Package endpoints keeps the core/v1 Endpoints object of every Service with
// a selector: ready pods in addresses, not-ready ones in notReadyAddresses,
// grouped into subsets by their resolved ports, as upstream's endpoints
// controller does. Each pod is listed by its address of the Service's
// primary IP family, since an Endpoints object holds one family.
// (Terminating pods are left out unless the service publishes not-ready
// addresses.)
package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/cidr"
	"orch/internal/controller"
	"orch/internal/worker"
)

// Controller reconciles Endpoints objects.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	log       *slog.Logger
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	core := ctx.Informers.Core().V1()
	c := &Controller{
		client: ctx.Client, services: core.Services().Lister(), pods: core.Pods().Lister(), endpoints: core.Endpoints().Lister(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		log:   ctx.Log.With("controller", "endpoints"),
	}
	enqueue := controller.EnqueueKey(c.queue.Add)
	core.Services().Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	// Only a deleted Endpoints brings its service back, as upstream's: an
	// Endpoints a user wrote without a Service (or changed) is left alone.
	core.Endpoints().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue})
	core.Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePod, UpdateFunc: func(old, obj any) { c.enqueuePod(old); c.enqueuePod(obj) }, DeleteFunc: c.enqueuePod,
	})
	c.synced = []cache.InformerSynced{core.Services().Informer().HasSynced, core.Pods().Informer().HasSynced, core.Endpoints().Informer().HasSynced}
	return c
}

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

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: 4, Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err != nil || svc.Spec.Selector == nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets := Subsets(svc, pods)
	current, err := c.endpoints.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: svc.Labels}, Subsets: subsets}
		_, err = c.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("endpoints %s exist but are not in the cache yet", key)
		}
		return err
	}
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(current.Subsets, subsets) && apiequality.Semantic.DeepEqual(current.Labels, svc.Labels) {
		return nil
	}
	updated := current.DeepCopy()
	updated.Subsets, updated.Labels = subsets, svc.Labels
	_, err = c.client.CoreV1().Endpoints(ns).Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

// Subsets groups the pods' addresses by resolved port set, sorted so that
// the same pods always give the same object.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	bySet := map[string]*corev1.EndpointSubset{}
	for _, pod := range pods {
		ip := addressFor(svc, pod)
		if ip == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		terminating := pod.DeletionTimestamp != nil
		if terminating && !svc.Spec.PublishNotReadyAddresses {
			continue
		}
		ports, key := endpointPorts(svc, pod)
		if len(ports) == 0 && len(svc.Spec.Ports) > 0 {
			continue
		}
		subset, ok := bySet[key]
		if !ok {
			subset = &corev1.EndpointSubset{Ports: ports}
			bySet[key] = subset
		}
		addr := corev1.EndpointAddress{IP: ip, NodeName: nodeName(pod),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			addr.Hostname = pod.Spec.Hostname
		}
		if controller.PodReady(pod) || svc.Spec.PublishNotReadyAddresses {
			subset.Addresses = append(subset.Addresses, addr)
		} else {
			subset.NotReadyAddresses = append(subset.NotReadyAddresses, addr)
		}
	}
	keys := make([]string, 0, len(bySet))
	for k := range bySet {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []corev1.EndpointSubset
	for _, k := range keys {
		s := bySet[k]
		sort.Slice(s.Addresses, func(i, j int) bool { return s.Addresses[i].IP < s.Addresses[j].IP })
		sort.Slice(s.NotReadyAddresses, func(i, j int) bool { return s.NotReadyAddresses[i].IP < s.NotReadyAddresses[j].IP })
		out = append(out, *s)
	}
	return out
}

// addressFor is the pod's address that an Endpoints object of svc lists,
// as upstream: the one of the service's primary family (ipFamilies[0]; for
// a service written without families, its cluster IP's family, or for a
// headless one the family of the pod's primary IP). "" when the pod has
// none of that family.
func addressFor(svc *corev1.Service, pod *corev1.Pod) string {
	var family corev1.IPFamily
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		family = svc.Spec.IPFamilies[0]
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		family = cidr.FamilyOf(svc.Spec.ClusterIP)
	default:
		family = cidr.FamilyOf(pod.Status.PodIP)
	}
	return cidr.PodIPOf(pod, family)
}

func endpointPorts(svc *corev1.Service, pod *corev1.Pod) ([]corev1.EndpointPort, string) {
	var ports []corev1.EndpointPort
	var key strings.Builder
	for _, sp := range svc.Spec.Ports {
		port, ok := controller.TargetPort(sp, pod)
		if !ok {
			continue
		}
		ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		fmt.Fprintf(&key, "%s/%s/%d;", sp.Name, sp.Protocol, port)
	}
	return ports, key.String()
}

func nodeName(pod *corev1.Pod) *string {
	if pod.Spec.NodeName == "" {
		return nil
	}
	name := pod.Spec.NodeName
	return &name
}
