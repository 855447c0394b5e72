// Package ephemeral is upstream's ephemeral volume controller: for each
// generic ephemeral volume of a pod (volumes[].ephemeral) it creates the
// PersistentVolumeClaim POD-VOLUME from the volume's claim template, owned
// by the pod (controller, blocking its deletion), so that the claim is
// provisioned and bound like any other and goes with the pod through the
// garbage collector. A claim of that name the pod does not own is left
// alone and reported on the pod (the kubelet refuses to use it). A claim
// deleted while its pod lives is made again.
package ephemeral

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name, as upstream's.
const Name = "ephemeral-volume"

// Controller makes the claims of pods' generic ephemeral volumes.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger
}

// New builds the controller and registers its informers.
func New(ctx controller.Context) *Controller {
	pods := ctx.Informers.Core().V1().Pods()
	claims := ctx.Informers.Core().V1().PersistentVolumeClaims()
	c := &Controller{client: ctx.Client, pods: pods.Lister(), claims: claims.Lister(),
		synced: []cache.InformerSynced{pods.Informer().HasSynced, claims.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ephemeral_volume", Clock: ctx.Clock}),
		recorder: ctx.Recorder("ephemeral_volume"), log: ctx.Log.With("controller", Name)}
	onPod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.DeletionTimestamp == nil && hasEphemeral(pod) {
			c.queue.Add(controller.Key(pod))
		}
	}
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onPod, UpdateFunc: func(_, obj any) { onPod(obj) }})
	claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return
		}
		if owner := metav1.GetControllerOf(pvc); owner != nil && owner.APIVersion == "v1" && owner.Kind == "Pod" {
			c.queue.Add(pvc.Namespace + "/" + owner.Name)
		}
	}})
	return c
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

func hasEphemeral(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || pod.DeletionTimestamp != nil {
		return err
	}
	for i := range pod.Spec.Volumes {
		if err := c.ensureClaim(ctx, pod, &pod.Spec.Volumes[i]); err != nil {
			c.recorder.Event(pod, corev1.EventTypeWarning, "FailedBinding", err.Error())
			return err
		}
	}
	return nil
}

// ensureClaim creates the claim of an ephemeral volume unless it exists.
func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) error {
	if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
		return nil
	}
	name := ephemeral.VolumeClaimName(pod, vol)
	existing, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	switch {
	case err == nil:
		return ephemeral.VolumeIsForPod(pod, existing)
	case !apierrors.IsNotFound(err):
		return err
	}
	_, err = c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, ClaimFor(pod, vol), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the informer brings it; the next sync checks its owner
	}
	if err != nil {
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	c.log.Info("created the claim of an ephemeral volume", "pod", controller.Key(pod), "claim", name)
	return nil
}

// ClaimFor is the claim of pod's ephemeral volume vol: the template's
// labels, annotations and spec, owned by the pod.
func ClaimFor(pod *corev1.Pod, vol *corev1.Volume) *corev1.PersistentVolumeClaim {
	tmpl := vol.Ephemeral.VolumeClaimTemplate
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ephemeral.VolumeClaimName(pod, vol),
			Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
}
