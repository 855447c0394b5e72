// Package localpath is the provisioner of orch's built-in local-path
// storage (see internal/localpath): for a claim of a StorageClass whose
// provisioner is localpath.Provisioner, once the scheduler has picked its
// pod's node (volume.kubernetes.io/selected-node, WaitForFirstConsumer), it
// creates the PersistentVolume, pre-bound to the claim, which the
// persistent volume binder then binds; when a bound claim asks for more
// storage (the class allows expansion), it grows the volume and the claim's
// status. The volume's directory is made and removed on its node (the
// kubelet and the agent's localpath.Cleaner), never here. Events are
// recorded as an external provisioner's, under the provisioner's name.
package localpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/volume"

	"orch/internal/controller"
	"orch/internal/localpath"
	"orch/internal/worker"
)

// Name is the controller's name.
const Name = "local-path"

// Controller provisions and expands local-path volumes.
type Controller struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	pvs      corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger
	root     string
}

// New builds the controller; root is where volumes go on their node when
// their class does not say (--default-local-storage-path).
func New(ctx controller.Context, root string) *Controller {
	claims := ctx.Informers.Core().V1().PersistentVolumeClaims()
	pvs := ctx.Informers.Core().V1().PersistentVolumes()
	classes := ctx.Informers.Storage().V1().StorageClasses()
	nodes := ctx.Informers.Core().V1().Nodes()
	c := &Controller{client: ctx.Client, claims: claims.Lister(), pvs: pvs.Lister(), classes: classes.Lister(), nodes: nodes.Lister(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, pvs.Informer().HasSynced, classes.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local-path", Clock: ctx.Clock}),
		recorder: ctx.Recorder(localpath.Provisioner), log: ctx.Log.With("controller", Name), root: root}
	onClaim := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			c.queue.Add(controller.Key(pvc))
		}
	}
	claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim, UpdateFunc: func(_, obj any) { onClaim(obj) }})
	// A volume's capacity write, or its loss, looks at its claim again.
	onVolume := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil &&
			pv.Annotations[volume.AnnDynamicallyProvisioned] == localpath.Provisioner {
			c.queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	}
	pvs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onVolume, UpdateFunc: func(_, obj any) { onVolume(obj) }})
	return c
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || claim.DeletionTimestamp != nil {
		return err
	}
	if claim.Spec.VolumeName != "" {
		return c.expand(ctx, claim)
	}
	return c.provision(ctx, claim)
}

// provision makes the volume of an unbound claim of a local-path class
// whose node has been picked.
func (c *Controller) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	className := volume.GetPersistentVolumeClaimClass(claim)
	if className == "" {
		return nil
	}
	class, err := c.classes.Get(className)
	if err != nil || class.Provisioner != localpath.Provisioner {
		return nil // the binder tells the claim about a missing class
	}
	nodeName := claim.Annotations[volume.AnnSelectedNode]
	waits := class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if waits && nodeName == "" {
		return nil // the scheduler has not picked a node yet
	}
	if _, err := c.pvs.Get(VolumeName(claim)); err == nil {
		return nil // made; the binder binds it
	}
	node := &corev1.Node{} // an Immediate class is refused by newVolume
	if waits {
		if node, err = c.nodes.Get(nodeName); err != nil {
			c.recorder.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: node %q: %v", className, nodeName, err)
			return nil
		}
	}
	pv, err := newVolume(claim, class, node, c.root)
	if errors.Is(err, errUnfit) {
		c.recorder.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", className, err)
		return nil
	}
	if err != nil {
		return err
	}
	c.recorder.Eventf(claim, corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name)
	if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.recorder.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", className, err)
		return fmt.Errorf("create volume %q: %w", pv.Name, err)
	}
	c.recorder.Eventf(claim, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pv.Name)
	c.log.Info("provisioned a volume", "claim", claim.Namespace+"/"+claim.Name, "volume", pv.Name, "node", nodeName, "path", pv.Spec.Local.Path)
	return nil
}
