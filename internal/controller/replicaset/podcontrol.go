package replicaset

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
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/controller"
)

// Event reasons, as upstream's controllers record them.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// controllerRef is the ownerReference an owner puts on the pods it
// controls: controller and blockOwnerDeletion both true.
func controllerRef(rs *appsv1.ReplicaSet, gvk schema.GroupVersionKind) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: rs.Name, UID: rs.UID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}
}

// podFromTemplate builds the pod an owner creates: the template's labels,
// annotations, finalizers and spec, the controller reference, and a
// generated name "<owner>-xxxxx".
func podFromTemplate(t *corev1.PodTemplateSpec, ownerName string, ref metav1.OwnerReference) *corev1.Pod {
	prefix := ownerName + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = ownerName
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    prefix,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Finalizers = append([]string{}, t.Finalizers...)
	return pod
}

// createPod creates one pod for rs and records the outcome as an event.
func (m *manager) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod := podFromTemplate(&rs.Spec.Template, rs.Name, controllerRef(rs, m.kind.gvk))
	if len(pod.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	created, err := m.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			m.recorder.Eventf(m.kind.original(rs), corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		}
		return err
	}
	m.log.Debug("created pod", "owner", controller.Key(rs), "pod", created.Name)
	m.recorder.Eventf(m.kind.original(rs), corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// deletePod deletes one of rs's pods and records the outcome as an event.
// A pod already gone is returned as NotFound without an event.
func (m *manager) deletePod(ctx context.Context, rs *appsv1.ReplicaSet, podName string) error {
	m.log.Debug("deleting pod", "owner", controller.Key(rs), "pod", podName)
	if err := m.client.CoreV1().Pods(rs.Namespace).Delete(ctx, podName, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		m.recorder.Eventf(m.kind.original(rs), corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	m.recorder.Eventf(m.kind.original(rs), corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", podName)
	return nil
}
