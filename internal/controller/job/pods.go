package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/controller"
)

// Event reasons of pod changes, as upstream's pod control records them.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

func hasFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer)
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// isActive: neither finished nor being deleted.
func isActive(pod *corev1.Pod) bool { return !isTerminal(pod) && pod.DeletionTimestamp == nil }

// isTerminating: being deleted but not finished yet.
func isTerminating(pod *corev1.Pod) bool { return !isTerminal(pod) && pod.DeletionTimestamp != nil }

// isPodFailed reports whether pod counts as failed: it is, or, unless the
// job only replaces failed pods, it was deleted before it succeeded.
func isPodFailed(pod *corev1.Pod, job *batchv1.Job) bool {
	if pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(job) {
		return false
	}
	return pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailed: a replacement waits until a terminating pod has
// failed (podReplacementPolicy Failed, implied by a podFailurePolicy).
func onlyReplaceFailed(job *batchv1.Job) bool {
	return job.Spec.PodFailurePolicy != nil ||
		(job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed)
}

// newPod builds the pod job runs, for index (noIndex for NonIndexed jobs):
// the template with the tracking finalizer and the controller reference;
// for an index also its annotation, label, hostname, name prefix and
// environment variable.
func newPod(job *batchv1.Job, index int, failures, ignored int32) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    podPrefix(job.Name),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: t.Spec,
	}
	if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if index == noIndex {
		return pod
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	if hasBackoffLimitPerIndex(job) {
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	pod.GenerateName = indexedGenerateName(job.Name, index)
	addIndexEnv(&pod.Spec)
	return pod
}

// podPrefix is "<job>-", or the bare name when that would not be valid.
func podPrefix(jobName string) string {
	if len(apivalidation.NameIsDNSSubdomain(jobName+"-", true)) != 0 {
		return jobName
	}
	return jobName + "-"
}

// createPod creates pod for job and records the outcome as an event. A
// namespace being deleted fails every create; that is not worth an event.
func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		}
		return err
	}
	c.log.Debug("created pod", "job", controller.Key(job), "pod", created.Name)
	c.recorder.Eventf(job, corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// deletePod deletes one of job's pods and records the outcome as an event;
// a pod already gone is returned as NotFound without one.
func (c *Controller) deletePod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		c.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", pod.Name)
	return nil
}

// removeFinalizer patches the tracking finalizer out of pod.
func (c *Controller) removeFinalizer(ctx context.Context, pod *corev1.Pod) error {
	if !hasFinalizer(pod) {
		return nil
	}
	return c.patchPod(ctx, pod, map[string]interface{}{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	})
}

func (c *Controller) patchPod(ctx context.Context, pod *corev1.Pod, metadata map[string]interface{}) error {
	data, err := json.Marshal(map[string]interface{}{"metadata": metadata})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return err
}

// syncOrphan removes the tracking finalizer of a pod no running job
// counts: its job is gone or finished, or it has no controller at all.
func (c *Controller) syncOrphan(ctx context.Context, key string) error {
	pod, err := controller.Lookup(key, c.pods.Pods)
	if pod == nil || err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ref.Kind != jobKind.Kind || ref.APIVersion != jobKind.GroupVersion().String() {
			return nil // someone else's pod
		}
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil && (!managedHere(job) || !isFinished(job)) {
			return nil // its job counts it
		}
	}
	if !hasFinalizer(pod) {
		return nil
	}
	// Only the version read: a job may have adopted the pod since.
	err = c.patchPod(ctx, pod, map[string]interface{}{
		"resourceVersion":                     pod.ResourceVersion,
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
