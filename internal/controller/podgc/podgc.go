// Package podgc deletes pods nobody else will, like upstream's pod garbage
// collector: finished pods beyond a threshold (oldest first), pods bound to
// nodes that no longer exist, and unscheduled pods already being deleted.
package podgc

import (
	"context"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Upstream's defaults (--terminated-pod-gc-threshold, the gc period).
const (
	DefaultThreshold = 12500
	period           = 20 * time.Second
	// orphanQuarantine is how long a pod's node must be missing before the
	// pod is deleted (a node may be re-registering).
	orphanQuarantine = 40 * time.Second
)

// Controller is the pod garbage collector.
type Controller struct {
	client    kubernetes.Interface
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
	log       *slog.Logger
	clock     clock.WithTicker
	Threshold int
	// missing remembers since when a node has been missing.
	missing map[string]time.Time
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	core := ctx.Informers.Core().V1()
	return &Controller{
		client: ctx.Client, pods: core.Pods().Lister(), nodes: core.Nodes().Lister(),
		synced:    []cache.InformerSynced{core.Pods().Informer().HasSynced, core.Nodes().Informer().HasSynced},
		log:       ctx.Log.With("controller", "podgc"),
		clock:     ctx.Clock,
		Threshold: DefaultThreshold,
		missing:   map[string]time.Time{},
	}
}

// Start collects every period until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "podgc", Clock: c.clock})
	queue.Add("all")
	return worker.Run(ctx, queue, c.collect, worker.Options{Synced: c.synced, Log: c.log})
}

// collect deletes the pods to collect, then looks again after a period.
func (c *Controller) collect(ctx context.Context, _ string) (worker.Result, error) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return worker.Result{}, err
	}
	var finished []*corev1.Pod
	now := c.clock.Now()
	for _, pod := range pods {
		switch {
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			finished = append(finished, pod)
		case pod.Spec.NodeName == "" && pod.DeletionTimestamp != nil:
			c.forceDelete(ctx, pod, "unscheduled and terminating")
		case pod.Spec.NodeName != "" && c.nodeGone(pod.Spec.NodeName, now):
			c.forceDelete(ctx, pod, "bound to a node that no longer exists")
		}
	}
	if excess := len(finished) - c.Threshold; c.Threshold > 0 && excess > 0 {
		sort.Slice(finished, func(i, j int) bool { return finished[i].CreationTimestamp.Before(&finished[j].CreationTimestamp) })
		for _, pod := range finished[:excess] {
			c.forceDelete(ctx, pod, "over the terminated pod threshold")
		}
	}
	return worker.Result{After: period}, nil
}

// nodeGone is true once a node has been missing for orphanQuarantine.
func (c *Controller) nodeGone(name string, now time.Time) bool {
	if _, err := c.nodes.Get(name); err == nil {
		delete(c.missing, name)
		return false
	}
	since, seen := c.missing[name]
	if !seen {
		c.missing[name] = now
		return false
	}
	return now.Sub(since) >= orphanQuarantine
}

func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod, why string) {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.log.Warn("cannot delete pod", "pod", pod.Namespace+"/"+pod.Name, "reason", why, "err", err)
		return
	}
	c.log.Info("deleted pod", "pod", pod.Namespace+"/"+pod.Name, "reason", why)
}
