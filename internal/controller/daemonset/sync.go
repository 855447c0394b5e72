package daemonset

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
)

// sync reconciles the DaemonSet with key: revisions first (the current
// one's hash labels new pods), then pods per node, the rolling update,
// old revisions, and status.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	ds, err := c.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(ds.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, reasonSelectingAll, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		// Its pods and revisions are the garbage collector's now; the status
		// of a DaemonSet being deleted cannot be trusted.
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	revs, err := c.revisions(ctx, ds)
	if err != nil {
		return fmt.Errorf("failed to construct revisions of DaemonSet %s: %w", key, err)
	}
	pods, err := c.claimPods(ctx, ds)
	if err != nil {
		return err
	}
	if !c.exp.Satisfied(key) {
		// Only the status: this generation has not been acted upon.
		return c.updateStatus(ctx, ds, nodes, pods, revs, false)
	}
	err = c.reconcile(ctx, ds, nodes, pods, revs)
	if statusErr := c.updateStatus(ctx, ds, nodes, pods, revs, true); err == nil {
		err = statusErr
	} else if statusErr != nil {
		c.log.Warn("status update failed", "daemonset", key, "err", statusErr)
	}
	return err
}

// reconcile puts one pod on each eligible node and none elsewhere, then
// moves the rolling update along once those changes have been observed,
// then drops old revisions beyond revisionHistoryLimit.
func (c *Controller) reconcile(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, revs revisions) error {
	if err := c.manage(ctx, ds, nodes, byNode(pods, false), revs.hash()); err != nil {
		return err
	}
	if c.exp.Satisfied(controller.Key(ds)) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if err := c.rollingUpdate(ctx, ds, nodes, byNode(pods, false), revs.hash()); err != nil {
			return err
		}
	}
	if err := c.cleanupRevisions(ctx, ds, pods, revs.old); err != nil {
		return fmt.Errorf("failed to clean up revisions of DaemonSet: %w", err)
	}
	return nil
}

// manage decides, node by node, which nodes need a daemon pod and which
// pods must go, and does it.
func (c *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, podsOn map[string][]*corev1.Pod, hash string) error {
	p := placementOf(ds)
	var create []string
	var remove []*corev1.Pod
	for _, node := range nodes {
		pods, exists := podsOn[node.Name]
		needs, gone := c.planNode(ds, node, p.on(node), pods, exists, hash)
		if needs {
			create = append(create, node.Name)
		}
		remove = append(remove, gone...)
	}
	remove = append(remove, unscheduledOnMissingNodes(nodes, podsOn)...)
	return c.syncNodes(ctx, ds, remove, create, hash)
}

// planNode decides for one node whether it needs a new daemon pod and
// which of its daemon pods must be deleted.
func (c *Controller) planNode(ds *appsv1.DaemonSet, node *corev1.Node, e eligibility, pods []*corev1.Pod, exists bool, hash string) (needs bool, remove []*corev1.Pod) {
	switch {
	case e.shouldRun && !exists:
		return true, nil
	case e.mayContinue:
		running := c.dropFinished(ds, node, pods, &remove)
		if !allowsSurge(ds) {
			// One pod per node: keep the oldest.
			if len(running) > 1 {
				sortOldestFirst(running)
				remove = append(remove, running[1:]...)
			}
			return false, remove
		}
		if len(running) == 0 {
			return e.shouldRun, remove
		}
		return false, append(remove, c.surgeExcess(ds, running, hash)...)
	case exists:
		// Not wanted here any more: every daemon pod on the node goes.
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				remove = append(remove, pod)
			}
		}
	}
	return false, remove
}

// dropFinished adds the node's failed and succeeded pods to remove (failed
// ones no faster than the per-node backoff allows) and returns the pods
// still running (or pending).
func (c *Controller) dropFinished(ds *appsv1.DaemonSet, node *corev1.Node, pods []*corev1.Pod, remove *[]*corev1.Pod) []*corev1.Pod {
	var running []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		switch pod.Status.Phase {
		case corev1.PodFailed:
			key := failedPodBackoffKey(ds, node.Name)
			now := c.clock.Now()
			if c.failedPods.IsInBackOffSinceUpdate(key, now) {
				delay := c.failedPods.Get(key)
				c.log.Debug("replacing a failed pod is delayed by backoff", "pod", controller.Key(pod), "node", node.Name, "delay", delay)
				c.delay.After(controller.Key(ds), delay)
				continue
			}
			c.failedPods.Next(key, now)
			c.recorder.Eventf(ds, corev1.EventTypeWarning, reasonFailedDaemonPod,
				"Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, node.Name)
			*remove = append(*remove, pod)
		case corev1.PodSucceeded:
			c.recorder.Eventf(ds, corev1.EventTypeNormal, reasonSucceededDaemonPod,
				"Found succeeded daemon pod %s/%s on node %s, will try to delete it", pod.Namespace, pod.Name, node.Name)
			*remove = append(*remove, pod)
		default:
			running = append(running, pod)
		}
	}
	return running
}

// surgeExcess returns the pods to delete on a node where a surge update
// may run an old and a new pod side by side: beyond the oldest pod of
// each kind everything goes, and the old one goes too once it is not ready
// or the new one is available.
func (c *Controller) surgeExcess(ds *appsv1.DaemonSet, running []*corev1.Pod, hash string) []*corev1.Pod {
	sortOldestFirst(running)
	var oldest, newest *corev1.Pod // the oldest old pod, the oldest new pod
	var remove []*corev1.Pod
	for _, pod := range running {
		isNew := pod.Labels[appsv1.ControllerRevisionHashLabelKey] == hash
		switch {
		case isNew && newest == nil:
			newest = pod
		case !isNew && oldest == nil:
			oldest = pod
		default:
			remove = append(remove, pod)
		}
	}
	if oldest != nil && newest != nil {
		if !controller.PodReady(oldest) || isAvailable(newest, ds.Spec.MinReadySeconds, c.clock.Now()) {
			remove = append(remove, oldest)
		}
	}
	return remove
}

func failedPodBackoffKey(ds *appsv1.DaemonSet, node string) string {
	return fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node)
}

// unscheduledOnMissingNodes returns the pods not yet bound that are meant
// for nodes that no longer exist: no scheduler will ever bind them. (Bound
// pods of a deleted node are the pod garbage collector's.)
func unscheduledOnMissingNodes(nodes []*corev1.Node, podsOn map[string][]*corev1.Pod) []*corev1.Pod {
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	var out []*corev1.Pod
	for node, pods := range podsOn {
		if exists[node] {
			continue
		}
		for _, pod := range pods {
			if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
				out = append(out, pod)
			}
		}
	}
	return out
}

// syncNodes deletes remove and creates a pod for each node of create, at
// most burstReplicas of each, recording what it expects to observe first.
// Creates go in slow-start batches (1, 2, 4, …) that stop at the first
// failing batch, so a quota or admission denial is not hit a thousand times.
func (c *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, remove []*corev1.Pod, create []string, hash string) error {
	key := controller.Key(ds)
	create = create[:min(len(create), burstReplicas)]
	remove = remove[:min(len(remove), burstReplicas)]
	deleting := make([]string, len(remove))
	for i, p := range remove {
		deleting[i] = controller.Key(p)
	}
	c.exp.Expect(key, len(create), deleting)

	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	template := podTemplate(ds, hash)
	done := 0
	for batch := min(len(create), 1); batch > 0; batch = min(2*batch, len(create)-done) {
		var wg sync.WaitGroup
		failed := len(errs)
		for _, node := range create[done : done+batch] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.createPod(ctx, ds, template, node)
				if err == nil {
					return
				}
				c.exp.CreationObserved(key) // a create that failed will never be seen
				if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					fail(err)
				}
			}()
		}
		wg.Wait()
		done += batch
		if len(errs) > failed {
			for range create[done:] {
				c.exp.CreationObserved(key) // never attempted
			}
			break
		}
	}

	var wg sync.WaitGroup
	for _, pod := range remove {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.deletePod(ctx, ds, pod); err != nil {
				c.exp.DeletionObserved(key, controller.Key(pod)) // a delete that failed will never be seen
				if !apierrors.IsNotFound(err) {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}
