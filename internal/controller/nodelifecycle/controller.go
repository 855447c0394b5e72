// Package nodelifecycle watches node heartbeats (their Leases in
// kube-node-lease and the Ready condition) like upstream's node lifecycle
// controller: a node silent for the grace period (50 s) gets Ready=Unknown;
// not-ready and unreachable nodes get the matching NoSchedule and NoExecute
// taints, and their pods Ready=False (MarkPodsNotReady); and pods on a node with a NoExecute taint they do not tolerate are
// deleted, at once or when their tolerationSeconds run out. New NoExecute
// taints are rate-limited (0.1 per second, as --node-eviction-rate), and none
// are added while every node is unhealthy (the problem is then more likely the
// server's network than the nodes). An autonomous node (AutonomousLabel,
// `orch agent --autonomous`) that goes silent gets only the NoSchedule
// unreachable taint: it runs its pods on its own, so they are not evicted.
//
// As upstream's TaintNodesByCondition, a node whose MemoryPressure,
// DiskPressure, PIDPressure or NetworkUnavailable condition is True gets the
// NoSchedule taint node.kubernetes.io/memory-pressure, disk-pressure,
// pid-pressure or network-unavailable; it is removed once the condition is
// not True (also when the node turns Unknown).
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Upstream's defaults.
const (
	GracePeriod   = 50 * time.Second
	MonitorPeriod = 5 * time.Second
	evictionRate  = 0.1
	podsByNode    = "nodelifecycle.orch.dev/node"
)

// Controller is the node lifecycle controller.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	leases   coordinationlisters.LeaseLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	evict    workqueue.TypedRateLimitingInterface[string]
	limiter  flowcontrol.RateLimiter
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.WithTicker

	// Grace and Monitor may be shortened by tests.
	Grace, Monitor time.Duration
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) (*Controller, error) {
	f := ctx.Informers
	podInformer := f.Core().V1().Pods().Informer()
	if err := podInformer.AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	c := &Controller{
		client: ctx.Client, nodes: f.Core().V1().Nodes().Lister(), leases: f.Coordination().V1().Leases().Lister(),
		pods: podInformer.GetIndexer(),
		evict: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "taint-eviction", Clock: ctx.Clock}),
		limiter:  flowcontrol.NewTokenBucketRateLimiterWithClock(evictionRate, 1, ctx.Clock),
		recorder: ctx.Recorder("node-controller"), log: ctx.Log.With("controller", "nodelifecycle"), clock: ctx.Clock,
		Grace: GracePeriod, Monitor: MonitorPeriod,
	}
	f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueuePodsOf(obj.(*corev1.Node).Name) },
	})
	podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueuePod(obj) }, UpdateFunc: func(_, obj any) { c.enqueuePod(obj) },
	})
	c.synced = []cache.InformerSynced{f.Core().V1().Nodes().Informer().HasSynced, podInformer.HasSynced,
		f.Coordination().V1().Leases().Informer().HasSynced}
	return c, nil
}

func (c *Controller) enqueuePod(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.evict.Add(key)
	}
}

func (c *Controller) enqueuePodsOf(node string) {
	pods, _ := c.pods.ByIndex(podsByNode, node)
	for _, p := range pods {
		c.enqueuePod(p)
	}
}

// Start monitors the nodes and evicts pods until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		c.evict.ShutDown()
		return nil
	}
	evicting := make(chan struct{})
	go func() {
		defer close(evicting)
		worker.Run(ctx, c.evict, c.evictOne, worker.Options{Log: c.log})
	}()
	defer func() { <-evicting }()
	ticker := c.clock.NewTicker(c.Monitor)
	defer ticker.Stop()
	for {
		c.monitor(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// monitor assesses every node and updates its Ready condition and taints.
func (c *Controller) monitor(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	health := make(map[string]Health, len(nodes))
	unhealthy := 0
	for _, n := range nodes {
		lease, _ := c.leases.Leases(corev1.NamespaceNodeLease).Get(n.Name)
		health[n.Name] = assess(n, lease, now, c.Grace)
		if health[n.Name] != Healthy {
			unhealthy++
		}
	}
	fullDisruption := len(nodes) > 0 && unhealthy == len(nodes)
	for _, n := range nodes {
		if err := c.reconcileNode(ctx, n, health[n.Name], now, fullDisruption); err != nil && ctx.Err() == nil {
			c.log.Warn("cannot update node; retrying at the next check", "node", n.Name, "err", err)
		}
	}
}

func (c *Controller) reconcileNode(ctx context.Context, node *corev1.Node, h Health, now time.Time, fullDisruption bool) error {
	if h == Unreachable {
		marked, err := c.markUnknown(ctx, node, now)
		if err != nil {
			return err
		}
		node = marked // taint the node as just written, or the update conflicts
	}
	if h != Healthy {
		if err := c.markPodsNotReady(ctx, node.Name, now); err != nil {
			return err
		}
	}
	wanted := append(wantedTaints(h, autonomous(node)), conditionTaints(node)...)
	taints, changed := reconcileTaints(node.Spec.Taints, wanted, now, false)
	withNoExecute, _ := reconcileTaints(node.Spec.Taints, wanted, now, true)
	if len(withNoExecute) > len(taints) && !fullDisruption && c.limiter.TryAccept() {
		taints, changed = withNoExecute, true
	}
	if !changed {
		return nil
	}
	updated := node.DeepCopy()
	updated.Spec.Taints = taints
	_, err := c.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
	if err == nil {
		c.log.Info("node taints changed", "node", node.Name, "taints", taintKeys(taints))
	}
	return err
}

// markUnknown sets every condition of a silent node to Unknown, once, and
// returns the node as written.
func (c *Controller) markUnknown(ctx context.Context, node *corev1.Node, now time.Time) (*corev1.Node, error) {
	ready := readyCondition(node)
	if ready != nil && ready.Status == corev1.ConditionUnknown {
		return node, nil
	}
	updated := node.DeepCopy()
	stamp := metav1.NewTime(now)
	for i := range updated.Status.Conditions {
		cond := &updated.Status.Conditions[i]
		cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", stamp
	}
	if ready == nil {
		updated.Status.Conditions = append(updated.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastTransitionTime: stamp})
	}
	written, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	c.recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
	return written, nil
}

// markPodsNotReady sets the Ready condition of the pods on an unhealthy
// node to False, as upstream's MarkPodsNotReady, so their Services' endpoints
// stop sending them traffic; the kubelet posts the pods' own status again
// when it is back. Pods already not ready are left alone.
func (c *Controller) markPodsNotReady(ctx context.Context, node string, now time.Time) error {
	pods, err := c.pods.ByIndex(podsByNode, node)
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range pods {
		pod := obj.(*corev1.Pod)
		i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if i < 0 || pod.Status.Conditions[i].Status == corev1.ConditionFalse {
			continue
		}
		updated := pod.DeepCopy()
		cond := &updated.Status.Conditions[i]
		cond.Status, cond.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(now)
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// evictOne deletes the pod of key once its toleration of its node's
// NoExecute taints has run out, or looks again when it will have.
func (c *Controller) evictOne(ctx context.Context, key string) (worker.Result, error) {
	obj, exists, err := c.pods.GetByKey(key)
	if err != nil || !exists {
		return worker.Result{}, nil
	}
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return worker.Result{}, nil
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return worker.Result{}, nil
	}
	at, evict := evictionTime(pod, node.Spec.Taints)
	if !evict {
		return worker.Result{}, nil
	}
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		return worker.Result{After: wait}, nil
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	err = c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return worker.Result{}, fmt.Errorf("evict pod %q: %w", key, err)
	}
	return worker.Result{}, nil
}

func taintKeys(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}
