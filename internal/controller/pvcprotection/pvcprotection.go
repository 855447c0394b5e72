// Package pvcprotection is upstream's PVC protection controller: a
// PersistentVolumeClaim being deleted keeps its kubernetes.io/pvc-protection
// finalizer while a scheduled pod uses it, so its data is not released
// under a running pod, and a claim that lacks the finalizer gets it.
package pvcprotection

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/volumeprotection"
	"orch/internal/worker"
)

// Name is the controller's name, as upstream's.
const Name = "pvc-protection"

// Controller adds and removes the claims' protection finalizer.
type Controller struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	claims := ctx.Informers.Core().V1().PersistentVolumeClaims()
	pods := ctx.Informers.Core().V1().Pods()
	c := &Controller{client: ctx.Client, claims: claims.Lister(), pods: pods.Lister(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, pods.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvcprotection", Clock: ctx.Clock}),
		log: ctx.Log.With("controller", Name)}
	onClaim := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && (volumeprotection.NeedsFinalizer(pvc, volumeprotection.ClaimFinalizer) ||
			volumeprotection.DeletionCandidate(pvc, volumeprotection.ClaimFinalizer)) {
			c.queue.Add(controller.Key(pvc))
		}
	}
	claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim, UpdateFunc: func(_, obj any) { onClaim(obj) }})
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, obj any) {
			c.podChanged(old, obj, false)
		},
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	})
	return c
}

// podChanged enqueues the claims of a pod that may have stopped holding
// them: one deleted, finished or not (yet) scheduled. An update may hide
// the deletion of a pod and the creation of another of the same name; the
// old one's claims are looked at again too.
func (c *Controller) podChanged(old, obj any, deleted bool) {
	pod := podOf(obj)
	if pod == nil {
		return
	}
	if deleted || pod.Spec.NodeName == "" || finished(pod) {
		for _, name := range volumeprotection.ClaimNames(pod) {
			c.queue.Add(pod.Namespace + "/" + name)
		}
	}
	if prev := podOf(old); prev != nil && prev.UID != pod.UID {
		c.podChanged(nil, prev, true)
	}
}

func podOf(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// finished is true for a pod whose containers have stopped for good, or
// that is being deleted.
func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, c.reconcile, worker.Options{Synced: c.synced, Log: c.log})
}

// reconcile removes the finalizer of a claim being deleted that no pod
// uses, and adds it to a live claim that lacks it.
func (c *Controller) reconcile(ctx context.Context, key string) (worker.Result, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if err != nil {
		return worker.Result{}, nil // gone
	}
	switch {
	case volumeprotection.DeletionCandidate(pvc, volumeprotection.ClaimFinalizer):
		used, err := c.inUse(ctx, pvc)
		if err != nil || used {
			return worker.Result{}, err
		}
		pvc = pvc.DeepCopy()
		volumeprotection.SetFinalizer(pvc, volumeprotection.ClaimFinalizer, false)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("remove the protection finalizer of claim %s: %w", key, err)
		}
		c.log.Info("released an unused claim for deletion", "claim", key)
	case volumeprotection.NeedsFinalizer(pvc, volumeprotection.ClaimFinalizer):
		pvc = pvc.DeepCopy()
		volumeprotection.SetFinalizer(pvc, volumeprotection.ClaimFinalizer, true)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return worker.Result{}, fmt.Errorf("add the protection finalizer to claim %s: %w", key, err)
		}
	}
	return worker.Result{}, nil
}

// inUse asks the informer's cache first; when no pod there uses the
// claim, a live list of the namespace's pods makes sure, since a pod just
// created may not be in the cache yet.
func (c *Controller) inUse(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	cached, err := c.pods.Pods(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, pod := range cached {
		if volumeprotection.PodUsesClaim(pod, pvc) {
			return true, nil
		}
	}
	live, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("list the pods of %s: %w", pvc.Namespace, err)
	}
	for i := range live.Items {
		if volumeprotection.PodUsesClaim(&live.Items[i], pvc) {
			return true, nil
		}
	}
	return false, nil
}
