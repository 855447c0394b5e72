package namespace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceResult is what remains of one resource after a pass.
type resourceResult struct {
	// estimate is how many more seconds to wait; zero does not mean the
	// content is gone.
	estimate int64
	// remaining is how many objects are left.
	remaining int
	// finalizers counts the objects left per finalizer.
	finalizers map[string]int
}

// deleteAllContentForResource deletes every gvr object in ns and lists what
// is left.
func (d *deleter) deleteAllContentForResource(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (resourceResult, error) {
	estimate, err := d.estimateGracefulTermination(ctx, gvr, ns)
	if err != nil {
		return resourceResult{}, err
	}
	deleted, err := d.deleteCollection(ctx, gvr, ns.Name)
	if err != nil {
		return resourceResult{estimate: estimate}, err
	}
	if !deleted {
		if err := d.deleteEachItem(ctx, gvr, ns.Name); err != nil {
			return resourceResult{estimate: estimate}, err
		}
	}
	// Verify nothing is left; what is left is fine while an estimate runs.
	items, listed, err := d.listCollection(ctx, gvr, ns.Name)
	if err != nil || !listed {
		return resourceResult{estimate: estimate}, err
	}
	if len(items.Items) == 0 {
		return resourceResult{}, nil
	}
	finalizers := map[string]int{}
	for _, item := range items.Items {
		for _, f := range item.GetFinalizers() {
			finalizers[f]++
		}
	}
	result := resourceResult{estimate: estimate, remaining: len(items.Items), finalizers: finalizers}
	switch {
	case estimate != 0:
		return result, nil
	case len(finalizers) > 0:
		// Finalizers are normal: give them the default time.
		result.estimate = finalizerEstimateSeconds
		return result, nil
	default:
		// Nothing explains why the objects are still there.
		return result, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr)
	}
}

// deleteCollection deletes all gvr objects in namespace with one request;
// false when the resource does not take deletecollection.
func (d *deleter) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	key := operationKey{"deletecollection", gvr}
	if !d.supported(key) {
		return false, nil
	}
	// Background, so that the garbage collector adds no orphan finalizer:
	// everything in the namespace goes anyway.
	background := metav1.DeletePropagationBackground
	err := d.metadata.Resource(gvr).Namespace(namespace).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
	if err == nil {
		return true, nil
	}
	// A resource discovery lists without top-level verbs answers NotFound.
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		d.setUnsupported(key)
		return false, nil
	}
	return true, err
}

// listCollection lists gvr objects in namespace; false when the resource
// cannot be listed.
func (d *deleter) listCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, bool, error) {
	key := operationKey{"list", gvr}
	if !d.supported(key) {
		return nil, false, nil
	}
	list, err := d.metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		return list, true, nil
	}
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		d.setUnsupported(key)
		return nil, false, nil
	}
	return nil, true, err
}

// deleteEachItem lists gvr objects in namespace and deletes them one by one.
func (d *deleter) deleteEachItem(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	items, listed, err := d.listCollection(ctx, gvr, namespace)
	if err != nil || !listed {
		return err
	}
	background := metav1.DeletePropagationBackground
	for _, item := range items.Items {
		err := d.metadata.Resource(gvr).Namespace(namespace).Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

// estimateGracefulTermination is how many seconds gvr objects may still
// need: for pods the longest termination grace period of a pod still
// running, less the time since the namespace was deleted.
func (d *deleter) estimateGracefulTermination(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (int64, error) {
	if gvr.GroupResource() != podsGVR.GroupResource() {
		return 0, nil
	}
	pods, err := d.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	estimate := int64(0)
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if grace := pod.Spec.TerminationGracePeriodSeconds; grace != nil && *grace > estimate {
			estimate = *grace
		}
	}
	if d.clock.Since(ns.DeletionTimestamp.Time) >= time.Duration(estimate)*time.Second {
		return 0, nil
	}
	return estimate, nil
}
