package crd

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"orch/internal/worker"
)

// instancePoll is how long the finalizer waits before it looks again for
// custom resources that are still there after their deletion (their own
// finalizers hold them); upstream's poll interval.
const instancePoll = 5 * time.Second

// The reasons and messages of the Terminating condition, upstream's.
const (
	reasonDeletionInProgress  = "InstanceDeletionInProgress"
	messageDeletionInProgress = "CustomResource deletion is in progress"
	reasonDeletionFailed      = "InstanceDeletionFailed"
	messageListFailedFm       = "could not list instances: %v"
	messageDeleteFailedFm     = "could not issue all deletes: %v"
	reasonDeletionCompleted   = "InstanceDeletionCompleted"
	messageDeletionCompleted  = "removed all instances"
	reasonNeverEstablished    = "NeverEstablished"
	messageNeverEstablished   = "resource was never established"
	reasonOverlappingBuiltIn  = "OverlappingBuiltInResource"
	messageOverlappingBuiltIn = "instances overlap with built-in resources in storage"
)

// finalize deletes the custom resources of crd, which is being deleted,
// and then removes its customresourcecleanup finalizer; the Terminating
// condition says how far it got. A CRD that was never established has
// none to delete, nor has one whose resource is a built-in one.
func (c *Controller) finalize(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (worker.Result, error) {
	if !apiextensionshelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return worker.Result{}, nil
	}
	gvr, gvrErr := instancesResource(crd)
	var done apiextensionsv1.CustomResourceDefinitionCondition
	switch {
	case overlapsBuiltIn(crd, gvr):
		done = terminating(apiextensionsv1.ConditionFalse, reasonOverlappingBuiltIn, messageOverlappingBuiltIn)
	case !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
		done = terminating(apiextensionsv1.ConditionFalse, reasonNeverEstablished, messageNeverEstablished)
	case gvrErr != nil:
		// Only a change to the CRD (serving a version) can mend it, and
		// that enqueues it.
		if _, err := c.writeTerminating(ctx, crd, terminating(apiextensionsv1.ConditionTrue, reasonDeletionFailed, fmt.Sprintf(messageListFailedFm, gvrErr))); err != nil {
			return worker.Result{}, err
		}
		return worker.Result{}, worker.Terminal(gvrErr)
	default:
		var err error
		crd, err = c.writeTerminating(ctx, crd, terminating(apiextensionsv1.ConditionTrue, reasonDeletionInProgress, messageDeletionInProgress))
		if crd == nil || err != nil {
			return worker.Result{}, err
		}
		remaining, cond, err := c.deleteInstances(ctx, crd.Name, gvr)
		if err != nil {
			_, werr := c.writeTerminating(ctx, crd, cond)
			return worker.Result{}, errors.Join(err, werr)
		}
		if remaining > 0 {
			c.log.Info("waiting for custom resources to go", "crd", crd.Name, "remaining", remaining)
			return worker.Result{After: instancePoll}, nil
		}
		done = cond
	}
	crd, err := c.writeTerminating(ctx, crd, done)
	if crd == nil || err != nil {
		return worker.Result{}, err
	}
	crd = crd.DeepCopy()
	apiextensionshelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
	_, err = c.client.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return worker.Result{}, nil // gone or changed meanwhile: its event brings it back
	}
	if err != nil {
		return worker.Result{}, fmt.Errorf("remove the finalizer of CustomResourceDefinition %q: %w", crd.Name, err)
	}
	c.log.Info("finalizer removed", "crd", crd.Name, "reason", done.Reason)
	return worker.Result{}, nil
}

// writeTerminating sets cond on crd's status unless it is there already,
// and returns crd as written; nil (and no error) when crd is gone or
// changed meanwhile, which its event brings back.
func (c *Controller) writeTerminating(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, cond apiextensionsv1.CustomResourceDefinitionCondition) (*apiextensionsv1.CustomResourceDefinition, error) {
	if apiextensionshelpers.IsCRDConditionEquivalent(apiextensionshelpers.FindCRDCondition(crd, apiextensionsv1.Terminating), &cond) {
		return crd, nil
	}
	crd = crd.DeepCopy()
	apiextensionshelpers.SetCRDCondition(crd, cond)
	written, err := c.client.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write the Terminating condition of CustomResourceDefinition %q: %w", crd.Name, err)
	}
	return written, nil
}

// deleteInstances deletes the custom resources of CRD name, reached as
// gvr, through the API: one deletecollection per namespace that has any
// (one for all of a cluster-scoped resource). It returns how many remain
// afterwards, with the Terminating condition that says so: in progress
// while some remain, InstanceDeletionCompleted when none do, and
// InstanceDeletionFailed with an error when a list or a delete fails.
func (c *Controller) deleteInstances(ctx context.Context, name string, gvr schema.GroupVersionResource) (int, apiextensionsv1.CustomResourceDefinitionCondition, error) {
	failed := func(format string, err error) (int, apiextensionsv1.CustomResourceDefinitionCondition, error) {
		return 0, terminating(apiextensionsv1.ConditionTrue, reasonDeletionFailed, fmt.Sprintf(format, err)), err
	}
	list, err := c.metadata.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return failed(messageListFailedFm, fmt.Errorf("list the %s of CustomResourceDefinition %q: %w", gvr.Resource, name, err))
	}
	deleted := map[string]bool{}
	var errs []error
	for _, item := range list.Items {
		ns := item.Namespace
		if deleted[ns] {
			continue
		}
		deleted[ns] = true
		err := c.metadata.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the %s of namespace %q: %w", gvr.Resource, ns, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return failed(messageDeleteFailedFm, err)
	}
	if len(deleted) > 0 {
		if list, err = c.metadata.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
			return failed(messageListFailedFm, fmt.Errorf("list the %s of CustomResourceDefinition %q: %w", gvr.Resource, name, err))
		}
	}
	if n := len(list.Items); n > 0 {
		return n, terminating(apiextensionsv1.ConditionTrue, reasonDeletionInProgress, messageDeletionInProgress), nil
	}
	return 0, terminating(apiextensionsv1.ConditionFalse, reasonDeletionCompleted, messageDeletionCompleted), nil
}

// instancesResource is the resource through which the custom resources
// of crd are reached: its storage version if served, else its first
// served version.
func instancesResource(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if version == "" || v.Storage {
			version = v.Name
		}
	}
	if version == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("no version of CustomResourceDefinition %q is served", crd.Name)
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}, nil
}

// overlapsBuiltIn tells whether the resource of crd is one the apiserver
// serves itself: upstream's list (APIServices and CustomResourceDefinitions,
// whose storage overlaps that of custom resources) and, since orch
// deletes custom resources through the API rather than in storage, a
// gvr whose path is that of a built-in kind (client-go's scheme), where a
// deletecollection would delete built-in objects.
func overlapsBuiltIn(crd *apiextensionsv1.CustomResourceDefinition, gvr schema.GroupVersionResource) bool {
	switch (schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}) {
	case schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"},
		schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}:
		return true
	}
	if gvr.Empty() {
		return false
	}
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		plural, _ := meta.UnsafeGuessKindToResource(gvr.GroupVersion().WithKind(kind))
		if plural == gvr {
			return true
		}
	}
	return false
}

// terminating is a Terminating condition.
func terminating(status apiextensionsv1.ConditionStatus, reason, message string) apiextensionsv1.CustomResourceDefinitionCondition {
	return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: status, Reason: reason, Message: message}
}
