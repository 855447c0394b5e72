package statefulset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
	"orch/internal/controller/history"
)

// sync reconciles the set with key: once the caches show our last writes,
// claim its revisions and pods, converge the pods, write status, trim the
// revision history, and plan the next availability check.
func (c *Controller) sync(ctx context.Context, key string) error {
	start := c.clock.Now()
	defer func() { c.log.Debug("synced", "key", key, "took", c.clock.Since(start)) }()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	if err := c.writes.ready(key); err != nil {
		return err
	}
	set, err := c.sets.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.writes.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		c.log.Info("StatefulSet has an invalid selector; fix spec.selector", "statefulset", key, "err", err)
		return nil // retrying cannot help
	}
	revs, err := c.history.List(set, selector)
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	return c.syncSet(ctx, set, pods, revs)
}

// syncSet converges set's pods and records the outcome.
func (c *Controller) syncSet(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision) error {
	set = set.DeepCopy()
	history.Sort(revs)
	now := c.clock.Now()
	current, update, collisions, err := c.revisions(ctx, set, revs)
	if err != nil {
		return utilerrors.NewAggregate([]error{err, c.truncateHistory(ctx, set, pods, revs, current, update)})
	}
	status, err := c.reconcile(ctx, set, pods, current, update, collisions, now)
	if status != nil {
		if statusErr := c.writeStatus(ctx, set, status); statusErr != nil {
			err = utilerrors.NewAggregate([]error{err, statusErr})
		}
	}
	if truncErr := c.truncateHistory(ctx, set, pods, revs, current, update); truncErr != nil {
		err = utilerrors.NewAggregate([]error{err, truncErr})
	}
	if err != nil {
		return err
	}
	if set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		next := time.Duration(set.Spec.MinReadySeconds) * time.Second
		if d, ok := controller.NextAvailabilityCheck(pods, set.Spec.MinReadySeconds, now, c.clock.Now()); ok {
			next = d
		}
		c.delay.After(controller.Key(set), next)
	}
	return nil
}

// claimPods reconciles ownership of the pods in set's namespace and returns
// those set controls afterwards. A pod is set's when set controls it, its
// labels match the selector, and its name is <set>-<ordinal>: orphans like
// that are adopted (unless set is being deleted), controlled pods that are
// no longer like that are released.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.pods.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return controller.Claim[*corev1.Pod]{
		Owner:   set,
		Matches: func(pod *corev1.Pod) bool { return selector.Matches(labels.Set(pod.Labels)) && isMemberOf(set, pod) },
		Recheck: func() error {
			fresh, err := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
			return controller.RecheckOwner("StatefulSet", set, fresh, err)
		},
		Adopt:   func(pod *corev1.Pod) (*corev1.Pod, error) { return c.adoptPod(ctx, set, pod) },
		Release: func(pod *corev1.Pod) error { return c.releasePod(ctx, set, pod) },
	}.Run(all)
}

func (c *Controller) adoptPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) (*corev1.Pod, error) {
	patch := controller.AdoptPatch(*metav1.NewControllerRef(set, controllerKind), pod.UID, nil)
	adopted, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("can't adopt Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.writes.wrote(controller.Key(set), set.UID, resPods, adopted.ResourceVersion)
	c.log.Info("adopted pod", "statefulset", controller.Key(set), "pod", pod.Name)
	return adopted, nil
}

// releasePod removes set's reference from pod.
func (c *Controller) releasePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	patch := controller.ReleasePatch(set.UID, pod.UID, nil)
	released, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("can't release Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.writes.wrote(controller.Key(set), set.UID, resPods, released.ResourceVersion)
	c.log.Info("released pod", "statefulset", controller.Key(set), "pod", pod.Name)
	return nil
}
