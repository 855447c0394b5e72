package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"orch/internal/controller"
	"orch/internal/controller/history"
)

// hashLabel is the label of a DaemonSet's revisions and pods that names
// the revision (its hash).
const hashLabel = appsv1.DefaultDaemonSetUniqueLabelKey

// revisions are a DaemonSet's ControllerRevisions as one sync sees them.
type revisions struct {
	current *appsv1.ControllerRevision
	old     []*appsv1.ControllerRevision
}

func (r revisions) hash() string { return r.current.Labels[hashLabel] }

// revisions returns ds's revisions: the one that holds its current
// template (created when the template is new, renumbered to the newest
// when an old one comes back, as after `kubectl rollout undo`) and the
// others.
func (c *Controller) revisions(ctx context.Context, ds *appsv1.DaemonSet) (revisions, error) {
	var out revisions
	selector, err := selectorOf(ds)
	if err != nil {
		return out, err
	}
	all, err := c.history.List(ds, selector)
	if err != nil {
		return out, err
	}
	data, err := templatePatch(ds)
	if err != nil {
		return out, err
	}
	probe := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}}
	var current []*appsv1.ControllerRevision
	for _, rev := range all {
		if history.Equal(rev, probe) {
			current = append(current, rev)
		} else {
			out.old = append(out.old, rev)
		}
	}
	next := maxRevision(out.old) + 1
	if len(current) == 0 {
		out.current, err = c.createRevision(ctx, ds, data, next)
		return out, err
	}
	cur, err := c.dedupRevisions(ctx, ds, current)
	if err != nil {
		return out, err
	}
	if cur.Revision < next {
		if cur, err = c.history.UpdateRevision(ctx, cur, next); err != nil {
			return out, err
		}
	}
	out.current = cur
	return out, nil
}

// createRevision stores ds's current template as revision number n. A
// hash collision moves status.collisionCount on; it is written at once.
func (c *Controller) createRevision(ctx context.Context, ds *appsv1.DaemonSet, data []byte, n int64) (*appsv1.ControllerRevision, error) {
	var count int32
	if ds.Status.CollisionCount != nil {
		count = *ds.Status.CollisionCount
	}
	before := count
	rev, err := history.New(ds, controllerKind, ds.Spec.Template.Labels, runtime.RawExtension{Raw: data}, n, &count)
	if err != nil {
		return nil, err
	}
	rev.Annotations = maps.Clone(ds.Annotations)
	rev.Labels[hashLabel] = rev.Labels[history.ControllerRevisionHashLabel]
	created, err := c.history.Create(ctx, ds, rev, &count)
	if err != nil {
		return nil, err
	}
	if count != before {
		c.log.Info("hash collision; collisionCount moved on", "daemonset", controller.Key(ds), "collisionCount", count)
		if err := c.storeCollisionCount(ctx, ds, count); err != nil {
			return nil, err
		}
	}
	if h := created.Labels[history.ControllerRevisionHashLabel]; h != "" && created.Labels[hashLabel] != h {
		// A collision renamed the revision after its labels were set.
		return c.relabelRevision(ctx, created, h)
	}
	return created, nil
}

// storeCollisionCount writes status.collisionCount on a fresh read of ds;
// it never moves back.
func (c *Controller) storeCollisionCount(ctx context.Context, ds *appsv1.DaemonSet, count int32) error {
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh, err := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.UID != ds.UID || (fresh.Status.CollisionCount != nil && *fresh.Status.CollisionCount >= count) {
			return nil
		}
		fresh.Status.CollisionCount = &count
		_, err = client.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
}

func (c *Controller) relabelRevision(ctx context.Context, rev *appsv1.ControllerRevision, hash string) (*appsv1.ControllerRevision, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{hashLabel: hash}}})
	return c.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// dedupRevisions keeps the newest of several revisions holding the same
// template: pods labelled with the others' hashes are relabelled, and the
// others deleted.
func (c *Controller) dedupRevisions(ctx context.Context, ds *appsv1.DaemonSet, same []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	history.Sort(same)
	keep := same[len(same)-1]
	if len(same) == 1 {
		return keep, nil
	}
	dropped := map[string]bool{}
	for _, rev := range same[:len(same)-1] {
		dropped[rev.Labels[hashLabel]] = true
	}
	pods, err := c.claimPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		if h := pod.Labels[hashLabel]; h != "" && dropped[h] && h != keep.Labels[hashLabel] {
			if err := c.relabelPod(ctx, pod, keep.Labels[hashLabel]); err != nil {
				return nil, err
			}
		}
	}
	for _, rev := range same[:len(same)-1] {
		if err := c.history.Delete(ctx, rev); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

func (c *Controller) relabelPod(ctx context.Context, pod *corev1.Pod, hash string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{hashLabel: hash}}})
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// cleanupRevisions deletes the oldest of old beyond revisionHistoryLimit,
// except those some pod still runs.
func (c *Controller) cleanupRevisions(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod, old []*appsv1.ControllerRevision) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	excess := len(old) - limit
	if excess <= 0 {
		return nil
	}
	live := map[string]bool{}
	for _, pod := range pods {
		if h := pod.Labels[hashLabel]; h != "" {
			live[h] = true
		}
	}
	sorted := append([]*appsv1.ControllerRevision(nil), old...)
	history.Sort(sorted)
	for _, rev := range sorted {
		if excess <= 0 {
			break
		}
		if live[rev.Labels[hashLabel]] {
			continue
		}
		if err := c.history.Delete(ctx, rev); err != nil {
			return err
		}
		excess--
	}
	return nil
}

func maxRevision(revs []*appsv1.ControllerRevision) int64 {
	var n int64
	for _, r := range revs {
		n = max(n, r.Revision)
	}
	return n
}

// templatePatch is the data of ds's revision: a strategic merge patch that
// replaces spec.template, byte for byte what upstream stores, so that
// `kubectl rollout undo` can apply it and `kubectl rollout history` can
// find the current revision.
func templatePatch(ds *appsv1.DaemonSet) ([]byte, error) {
	raw, err := json.Marshal(ds.Spec.Template)
	if err != nil {
		return nil, err
	}
	var template map[string]any
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	if err != nil {
		return nil, fmt.Errorf("encoding the template of DaemonSet %s: %w", controller.Key(ds), err)
	}
	return patch, nil
}
