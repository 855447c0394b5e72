package daemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/controller"
)

// Event reasons, as upstream records them.
const (
	reasonSuccessfulCreate   = "SuccessfulCreate"
	reasonFailedCreate       = "FailedCreate"
	reasonSuccessfulDelete   = "SuccessfulDelete"
	reasonFailedDelete       = "FailedDelete"
	reasonFailedDaemonPod    = "FailedDaemonPod"
	reasonSucceededDaemonPod = "SucceededDaemonPod"
	reasonSelectingAll       = "SelectingAll"
)

// claimPods returns the pods ds controls after reconciling ownership of
// its pods and of the orphans of its namespace: orphans its selector
// matches are adopted, its pods the selector no longer matches are
// released. Before the first adoption ds is read fresh from the apiserver:
// a DaemonSet being deleted must not adopt.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	selector, err := selectorOf(ds)
	if err != nil {
		return nil, err
	}
	candidates, err := c.ownedOrOrphaned(ds)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	var adoptErr error
	canAdopt := func() error {
		once.Do(func() { adoptErr = c.checkCanAdopt(ctx, ds) })
		return adoptErr
	}
	var claimed []*corev1.Pod
	var errs []error
	for _, pod := range candidates {
		matches := selector.Matches(labels.Set(pod.Labels))
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref != nil && ref.UID != ds.UID:
			// Another controller's.
		case ref != nil && matches:
			claimed = append(claimed, pod)
		case ref != nil:
			if err := c.patchPod(ctx, pod, releasePatch(ds.UID, pod.UID)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, err)
			}
		case !matches || pod.DeletionTimestamp != nil:
			// An orphan we should not take.
		default:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt pod %s: %w", controller.Key(pod), err))
				continue
			}
			err := c.patchPod(ctx, pod, adoptPatch(controllerRef(ds), pod.UID))
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.log.Info("adopted pod", "daemonset", controller.Key(ds), "pod", pod.Name)
			claimed = append(claimed, pod)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// checkCanAdopt reads ds from the apiserver: it must still be the same
// object and not being deleted.
func (c *Controller) checkCanAdopt(ctx context.Context, ds *appsv1.DaemonSet) error {
	fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	case fresh.UID != ds.UID:
		return fmt.Errorf("original DaemonSet %s is gone: got uid %s, wanted %s", controller.Key(ds), fresh.UID, ds.UID)
	case fresh.DeletionTimestamp != nil:
		return fmt.Errorf("DaemonSet %s has just been deleted at %v", controller.Key(ds), fresh.DeletionTimestamp)
	}
	return nil
}

func (c *Controller) patchPod(ctx context.Context, pod *corev1.Pod, patch []byte) error {
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// controllerRef is the reference a DaemonSet puts on its pods and
// revisions.
func controllerRef(ds *appsv1.DaemonSet) metav1.OwnerReference {
	return *metav1.NewControllerRef(ds, controllerKind)
}

// adoptPatch makes owner the controller of the object with uid (the uid
// makes the patch fail if the object was replaced meanwhile).
func adoptPatch(owner metav1.OwnerReference, uid types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{owner}, "uid": uid,
	}})
	return b
}

// releasePatch removes the reference to ownerUID from the object with uid.
func releasePatch(ownerUID, uid types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]string{{"$patch": "delete", "uid": string(ownerUID)}}, "uid": uid,
	}})
	return b
}

// createPod creates ds's pod for node from template, pinned to the node by
// its node affinity (the scheduler binds it), and records an event.
func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec, node string) error {
	if len(template.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    podNamePrefix(ds.Name),
			Labels:          maps.Clone(template.Labels),
			Annotations:     maps.Clone(template.Annotations),
			Finalizers:      append([]string(nil), template.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{controllerRef(ds)},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	pod.Spec.Affinity = pinToNode(pod.Spec.Affinity, node)
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(ds, corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		}
		return err
	}
	c.log.Debug("created pod", "daemonset", controller.Key(ds), "pod", created.Name, "node", node)
	c.recorder.Eventf(ds, corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// deletePod deletes one of ds's pods and records an event; a pod already
// gone is returned as NotFound, without an event.
func (c *Controller) deletePod(ctx context.Context, ds *appsv1.DaemonSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pod %s: %w", controller.Key(pod), err)
	}
	c.log.Debug("deleted pod", "daemonset", controller.Key(ds), "pod", pod.Name)
	c.recorder.Eventf(ds, corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", pod.Name)
	return nil
}

// podNamePrefix is "<ds>-", or "<ds>" when the dash would make an invalid
// name.
func podNamePrefix(owner string) string {
	prefix := owner + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return owner
	}
	return prefix
}

// isTerminal: the pod has finished (Succeeded or Failed).
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
