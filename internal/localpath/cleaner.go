package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/volumeprotection"
	"orch/internal/worker"
)

// Cleaner runs on every agent: it removes the directories of its node's
// local-path volumes once they are released (their claim is gone) and
// their reclaim policy is Delete, or once a volume that is not bound is
// deleted, and then lets the PersistentVolume go (it deletes it and takes
// Finalizer off). A node that is away cleans up when it is back.
//
// It also holds the directory of each of its node's volumes that is there
// already to the volume's capacity, where the directory's filesystem
// enforces project quotas (see the package's doc): when the server's
// provisioner grows a volume, the limit grows on its node. A directory not
// made yet gets its limit from Ensure, when a pod first uses it.
type Cleaner struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	pvs     corelisters.PersistentVolumeLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	log     *slog.Logger
	quota   quotaSetter
}

// NewCleaner builds the Cleaner of node, whose informer sees only the
// volumes labelled with the node (NodeLabel). The node's project quotas
// (which Ensure sets too) log with its logger from then on.
func NewCleaner(client kubernetes.Interface, node string, log *slog.Logger) *Cleaner {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.Set{NodeLabel: node}.String()
	}))
	informer := factory.Core().V1().PersistentVolumes()
	c := &Cleaner{client: client, factory: factory, pvs: informer.Lister(), synced: informer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "local-path-cleaner"}),
		log: log.With("component", "local-path", "node", node), quota: quotas}
	quotas.setLog(c.log)
	informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pv, ok := obj.(*corev1.PersistentVolume); ok {
				c.queue.Add(pv.Name)
			}
		},
		UpdateFunc: func(old, obj any) {
			was, ok1 := old.(*corev1.PersistentVolume)
			pv, ok2 := obj.(*corev1.PersistentVolume)
			if ok1 && ok2 && changed(was, pv) {
				c.queue.Add(pv.Name)
			}
		},
	})
	return c
}

// changed is true when an update of a volume (from was to pv) asks
// something of the Cleaner: its directory is to go, or its capacity
// changed. Every volume is looked at once when the Cleaner starts.
func changed(was, pv *corev1.PersistentVolume) bool {
	return Reclaimable(pv) || capacity(was) != capacity(pv)
}

// Start runs until ctx ends.
func (c *Cleaner) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: []cache.InformerSynced{c.synced}, Log: c.log})
}

// Reclaimable is true for a local-path volume whose directory is to be
// removed now: it has Finalizer (so its policy was Delete when it was
// made), its policy is still Delete, and it is Released, or deleted
// while not bound to a claim.
func Reclaimable(pv *corev1.PersistentVolume) bool {
	if !slices.Contains(pv.Finalizers, Finalizer) || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return false
	}
	return pv.Status.Phase == corev1.VolumeReleased || (pv.DeletionTimestamp != nil && pv.Status.Phase != corev1.VolumeBound)
}

func (c *Cleaner) sync(ctx context.Context, name string) error {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if Reclaimable(pv) {
		return c.clean(ctx, pv)
	}
	return c.limit(pv)
}

// limit holds pv's directory, when it is there, to pv's capacity.
func (c *Cleaner) limit(pv *corev1.PersistentVolume) error {
	dir, err := Dir(pv)
	if err != nil {
		return nil // not Provisioner's: no directory of ours to limit
	}
	_, err = c.quota.setQuota(dir, capacity(pv))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Ensure limits it when it makes it
	}
	if err != nil {
		return fmt.Errorf("hold volume %q to its capacity: %w", pv.Name, err)
	}
	return nil
}

// clean removes the directory of pv, a Reclaimable volume, then pv.
func (c *Cleaner) clean(ctx context.Context, pv *corev1.PersistentVolume) error {
	name := pv.Name
	dir, err := Dir(pv)
	if err != nil {
		// Not ours to remove: the worker says so once; the volume stays.
		return worker.Terminal(fmt.Errorf("left alone: %w", err))
	}
	// The limit goes first, while the directory still names its project:
	// the filesystem would keep it after the directory, and a later
	// volume would have to pass its project ID by.
	if _, err := c.quota.setQuota(dir, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("could not clear the project quota of a released volume's directory; removing the directory all the same",
			"volume", name, "dir", dir, "err", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the directory of volume %q: %w", name, err)
	}
	c.log.Info("removed the directory of a released volume", "volume", name, "dir", dir)
	if pv.DeletionTimestamp == nil {
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete volume %q: %w", name, err)
		}
	}
	return c.dropFinalizer(ctx, pv)
}

// dropFinalizer takes Finalizer off the volume (read again, so that a
// finalizer added meanwhile is kept).
func (c *Cleaner) dropFinalizer(ctx context.Context, pv *corev1.PersistentVolume) error {
	latest, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.UID != pv.UID || !slices.Contains(latest.Finalizers, Finalizer) {
		return nil
	}
	volumeprotection.SetFinalizer(latest, Finalizer, false)
	_, err = c.client.CoreV1().PersistentVolumes().Update(ctx, latest, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
