package job

import (
	"context"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/controller"
)

// claimPods returns the pods job controls, after adopting the orphans its
// selector matches (with the tracking finalizer) and releasing the pods it
// controls that no longer match. Before the first adoption the job is read
// fresh: a job being deleted must not adopt.
func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert Job selector: %w", err)
	}
	all, err := c.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := sync.OnceValue(func() error { return c.canAdopt(ctx, job) })
	var claimed []*corev1.Pod
	var errs []error
	for _, pod := range all {
		matches := !selector.Empty() && selector.Matches(labels.Set(pod.Labels))
		ref := metav1.GetControllerOfNoCopy(pod)
		switch {
		case ref != nil && ref.UID != job.UID:
			// Someone else's.
		case ref != nil && matches:
			claimed = append(claimed, pod)
		case ref != nil:
			if job.DeletionTimestamp == nil {
				errs = append(errs, c.release(ctx, job, pod))
			}
		case !matches || job.DeletionTimestamp != nil || pod.DeletionTimestamp != nil:
			// An orphan we cannot or should not take.
		default:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt Pod %s/%s: %w", pod.Namespace, pod.Name, err))
				continue
			}
			if err := c.adopt(ctx, job, pod); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				continue
			}
			// Counted from now on as if it had been created with the finalizer.
			adopted := pod.DeepCopy()
			adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
			claimed = append(claimed, adopted)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

func (c *Controller) canAdopt(ctx context.Context, job *batchv1.Job) error {
	fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	case fresh.UID != job.UID:
		return fmt.Errorf("original Job %s is gone: got uid %s, wanted %s", controller.Key(job), fresh.UID, job.UID)
	case fresh.DeletionTimestamp != nil:
		return fmt.Errorf("%s has just been deleted at %v", controller.Key(job), fresh.DeletionTimestamp)
	}
	return nil
}

// adopt makes job the controller of pod and adds the tracking finalizer;
// the uid makes the patch fail if the pod was replaced.
func (c *Controller) adopt(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	err := c.patchPod(ctx, pod, map[string]interface{}{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		"finalizers":      []string{batchv1.JobTrackingFinalizer},
		"uid":             pod.UID,
	})
	if err != nil {
		return err
	}
	c.log.Info("adopted pod", "job", controller.Key(job), "pod", pod.Name)
	return nil
}

// release removes job's reference and the tracking finalizer from pod. A
// pod that is gone or was replaced needs no release.
func (c *Controller) release(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	err := c.patchPod(ctx, pod, map[string]interface{}{
		"ownerReferences":                     []map[string]string{{"$patch": "delete", "uid": string(job.UID)}},
		"uid":                                 pod.UID,
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	})
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	if err == nil {
		c.log.Info("released pod", "job", controller.Key(job), "pod", pod.Name)
	}
	return err
}
