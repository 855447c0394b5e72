package job

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	return controller.Claim[*corev1.Pod]{
		Owner:   job,
		Matches: func(pod *corev1.Pod) bool { return !selector.Empty() && selector.Matches(labels.Set(pod.Labels)) },
		Recheck: func() error {
			fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
			return controller.RecheckOwner("Job", job, fresh, err)
		},
		Adopt: func(pod *corev1.Pod) (*corev1.Pod, error) {
			if err := c.adopt(ctx, job, pod); err != nil {
				return nil, err
			}
			// Counted from now on as if it had been created with the finalizer.
			adopted := pod.DeepCopy()
			adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
			return adopted, nil
		},
		Release: func(pod *corev1.Pod) error { return c.release(ctx, job, pod) },
	}.Run(all)
}

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

// release removes job's reference and the tracking finalizer from pod.
func (c *Controller) release(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	err := c.patchPod(ctx, pod, map[string]interface{}{
		"ownerReferences":                     []map[string]string{{"$patch": "delete", "uid": string(job.UID)}},
		"uid":                                 pod.UID,
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	})
	if err == nil {
		c.log.Info("released pod", "job", controller.Key(job), "pod", pod.Name)
	}
	return err
}
