package daemonset

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

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
	return controller.Claim[*corev1.Pod]{
		Owner:   ds,
		Matches: func(pod *corev1.Pod) bool { return selector.Matches(labels.Set(pod.Labels)) },
		Recheck: func() error {
			fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
			return controller.RecheckOwner("DaemonSet", ds, fresh, err)
		},
		Adopt: func(pod *corev1.Pod) (*corev1.Pod, error) {
			if err := c.patchPod(ctx, pod, controller.AdoptPatch(controllerRef(ds), pod.UID, nil)); err != nil {
				return nil, err
			}
			c.log.Info("adopted pod", "daemonset", controller.Key(ds), "pod", pod.Name)
			return pod, nil
		},
		Release: func(pod *corev1.Pod) error {
			return c.patchPod(ctx, pod, controller.ReleasePatch(ds.UID, pod.UID, nil))
		},
	}.Run(candidates)
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
