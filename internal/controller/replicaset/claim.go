package replicaset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/controller"
)

// claimPods reconciles ownership of pods (the pods rs controls plus the
// orphans of its namespace) and returns those rs controls afterwards:
// orphans that match the selector are adopted, controlled pods that no
// longer match are released. Before the first adoption the owner is read
// fresh from the apiserver: an owner being deleted must not adopt.
func (m *manager) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var (
		once     sync.Once
		adoptErr error
	)
	canAdopt := func() error {
		once.Do(func() {
			fresh, err := m.kind.fresh(ctx, rs.Namespace, rs.Name)
			switch {
			case err != nil:
				adoptErr = fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
			case fresh.UID != rs.UID:
				adoptErr = fmt.Errorf("original %s %s is gone: got uid %s, wanted %s", m.kind.gvk.Kind, controller.Key(rs), fresh.UID, rs.UID)
			case fresh.DeletionTimestamp != nil:
				adoptErr = fmt.Errorf("%s has just been deleted at %v", controller.Key(rs), fresh.DeletionTimestamp)
			}
		})
		return adoptErr
	}
	var claimed []*corev1.Pod
	var errs []error
	for _, pod := range pods {
		matches := selector.Matches(labels.Set(pod.Labels))
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref != nil && ref.UID != rs.UID:
			// Someone else's.
		case ref != nil && matches:
			claimed = append(claimed, pod)
		case ref != nil:
			// Ours, but no longer selected: let go, unless we are going.
			if rs.DeletionTimestamp != nil {
				continue
			}
			if err := m.releasePod(ctx, rs, pod); err != nil {
				errs = append(errs, err)
			}
		case !matches || rs.DeletionTimestamp != nil || pod.DeletionTimestamp != nil || pod.Namespace != rs.Namespace:
			// An orphan we cannot or should not take.
		default:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt Pod %s (%s): %w", controller.Key(pod), pod.UID, err))
				continue
			}
			err := m.patchPod(ctx, pod, func() ([]byte, error) { return adoptPatch(controllerRef(rs, m.kind.gvk), pod.UID) })
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m.log.Info("adopted pod", "owner", controller.Key(rs), "pod", pod.Name)
			claimed = append(claimed, pod)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// releasePod removes rs's controller reference from pod. A pod that is gone
// or was replaced (the patch's uid no longer matches) needs no release.
func (m *manager) releasePod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	err := m.patchPod(ctx, pod, func() ([]byte, error) { return releasePatch(rs.UID, pod.UID) })
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	if err == nil {
		m.log.Info("released pod", "owner", controller.Key(rs), "pod", pod.Name)
	}
	return err
}

func (m *manager) patchPod(ctx context.Context, pod *corev1.Pod, patch func() ([]byte, error)) error {
	data, err := patch()
	if err != nil {
		return err
	}
	_, err = m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return err
}
