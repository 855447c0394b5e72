package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/controller"
	"orch/internal/controller/history"
)

// revisionData is what a StatefulSet's ControllerRevision holds, the form
// kubectl rollout undo applies as a strategic merge patch:
// {"spec":{"template":{...,"$patch":"replace"}}}.
func revisionData(set *appsv1.StatefulSet) ([]byte, error) {
	raw, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, err
	}
	var template map[string]interface{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": template}})
}

// newRevision builds (does not create) the revision of set's current
// template, numbered revision, with the set's annotations (so that
// kubectl rollout history shows kubernetes.io/change-cause).
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := revisionData(set)
	if err != nil {
		return nil, fmt.Errorf("encode the pod template of StatefulSet %s: %w", controller.Key(set), err)
	}
	rev, err := history.New(set, controllerKind, set.Spec.Template.Labels, runtime.RawExtension{Raw: data}, revision, collisionCount)
	if err != nil {
		return nil, err
	}
	if len(set.Annotations) > 0 {
		rev.Annotations = copyMap(set.Annotations)
	}
	return rev, nil
}

// applyRevision returns a copy of set whose pod template is the one
// recorded in rev.
func applyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("ControllerRevision %s/%s does not hold a StatefulSet pod template (delete it to let the controller recreate it): %w",
			rev.Namespace, rev.Name, err)
	}
	clone := set.DeepCopy()
	clone.Spec.Template = data.Spec.Template
	return clone, nil
}

func nextRevision(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

// revisions finds set's current and update revisions among its sorted
// revisions. The update revision is the one holding the set's template: the
// latest if it does; an older one if the template went back to it (it is
// renumbered to the next revision, a rollback); else a new one is created.
// The current revision is status.currentRevision, or the update revision
// when there is none yet. It also returns the collision count to record.
func (c *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, sorted []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	proposed, err := newRevision(set, nextRevision(sorted), &collisions)
	if err != nil {
		return nil, nil, collisions, err
	}
	equal := history.FindEqual(sorted, proposed)
	switch {
	case len(equal) > 0 && history.Equal(sorted[len(sorted)-1], equal[len(equal)-1]):
		update = sorted[len(sorted)-1]
	case len(equal) > 0:
		update, err = c.history.UpdateRevision(ctx, equal[len(equal)-1], proposed.Revision)
	default:
		update, err = c.history.Create(ctx, set, proposed, &collisions)
	}
	if err != nil {
		return nil, nil, collisions, err
	}
	for _, r := range sorted {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisions, nil
}

// truncateHistory deletes the oldest revisions that are not live (the
// current and update revisions, and those a pod still runs) until at most
// spec.revisionHistoryLimit of them remain. sorted must be sorted.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, sorted []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{}
	if current != nil {
		live[current.Name] = true
	}
	if update != nil {
		live[update.Name] = true
	}
	for _, p := range pods {
		live[revisionOf(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range sorted {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		if err := c.history.Delete(ctx, r); err != nil {
			return fmt.Errorf("delete old ControllerRevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}
