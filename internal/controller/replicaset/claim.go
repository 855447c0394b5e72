package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/controller"
)

// claimPods reconciles ownership of pods (the pods rs controls plus the
// orphans of its namespace) and returns those rs controls afterwards
// (controller.Claim).
func (m *manager) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.Claim[*corev1.Pod]{
		Owner:   rs,
		Matches: func(pod *corev1.Pod) bool { return selector.Matches(labels.Set(pod.Labels)) },
		Recheck: func() error {
			fresh, err := m.kind.fresh(ctx, rs.Namespace, rs.Name)
			return controller.RecheckOwner(m.kind.gvk.Kind, rs, fresh, err)
		},
		Adopt: func(pod *corev1.Pod) (*corev1.Pod, error) {
			if err := m.patchPod(ctx, pod, controller.AdoptPatch(controllerRef(rs, m.kind.gvk), pod.UID, nil)); err != nil {
				return nil, err
			}
			m.log.Info("adopted pod", "owner", controller.Key(rs), "pod", pod.Name)
			return pod, nil
		},
		Release: func(pod *corev1.Pod) error {
			if err := m.patchPod(ctx, pod, controller.ReleasePatch(rs.UID, pod.UID, nil)); err != nil {
				return err
			}
			m.log.Info("released pod", "owner", controller.Key(rs), "pod", pod.Name)
			return nil
		},
	}.Run(pods)
}

func (m *manager) patchPod(ctx context.Context, pod *corev1.Pod, patch []byte) error {
	_, err := m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
