package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
)

// finalizerEstimateSeconds is how long objects held by finalizers are
// assumed to need, as upstream.
const finalizerEstimateSeconds = int64(15)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// ResourcesRemainingError says content is still being removed; look again
// after about Estimate seconds.
type ResourcesRemainingError struct {
	Estimate int64
}

func (e *ResourcesRemainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.Estimate)
}

// operationKey names an operation on a resource.
type operationKey struct {
	operation string // "list" or "deletecollection"
	gvr       schema.GroupVersionResource
}

// deleter removes the content of a namespace being deleted.
type deleter struct {
	log      *slog.Logger
	clock    clock.Clock
	client   kubernetes.Interface
	metadata metadata.Interface
	discover func() ([]*metav1.APIResourceList, error)

	// unsupported remembers operations a resource does not offer.
	mu          sync.RWMutex
	unsupported map[operationKey]bool
}

// Delete removes everything in namespace name if it is being deleted, then
// finalizes it. It returns a *ResourcesRemainingError while content is
// still going away; the caller calls it again until it returns nil.
func (d *deleter) Delete(ctx context.Context, name string) error {
	namespaces := d.client.CoreV1().Namespaces()
	ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ns, err = d.retryOnConflict(ctx, ns, d.markTerminating)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp.IsZero() || len(ns.Spec.Finalizers) == 0 {
		return nil
	}
	estimate, err := d.deleteAllContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &ResourcesRemainingError{Estimate: estimate}
	}
	_, err = d.retryOnConflict(ctx, ns, d.finalize)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// retryOnConflict runs fn, reading the namespace again after each conflict;
// it gives up when the namespace was replaced by another with the same name.
func (d *deleter) retryOnConflict(ctx context.Context, ns *corev1.Namespace, fn func(context.Context, *corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	for {
		result, err := fn(ctx, ns)
		if err == nil {
			return result, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		latest, err := d.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, fmt.Errorf("namespace %q: uid has changed across retries", ns.Name)
		}
		ns = latest
	}
}

// markTerminating sets status.phase Terminating if it is not yet.
func (d *deleter) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.DeletionTimestamp.IsZero() || ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	return d.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
}

// finalize removes the "kubernetes" finalizer from spec.finalizers.
func (d *deleter) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	ns = ns.DeepCopy()
	kept := map[corev1.FinalizerName]bool{}
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept[f] = true
		}
	}
	ns.Spec.Finalizers = make([]corev1.FinalizerName, 0, len(kept))
	for f := range kept {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, f)
	}
	sort.Slice(ns.Spec.Finalizers, func(i, j int) bool { return ns.Spec.Finalizers[i] < ns.Spec.Finalizers[j] })
	result, err := d.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		// Removed already.
		return ns, nil
	}
	return result, err
}

// contentTotals is what remains in the namespace after a pass.
type contentTotals struct {
	// remaining counts the objects left per resource.
	remaining map[schema.GroupVersionResource]int
	// finalizers counts the objects left per finalizer.
	finalizers map[string]int
}

// deleteAllContent deletes everything in ns (pods first, the rest once no
// pod is left), records the outcome in ns's conditions and returns how many
// seconds the remaining content is expected to need.
func (d *deleter) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	var errs []error
	updater := &conditionUpdater{now: d.clock.Now}
	resources, err := d.discover()
	if err != nil {
		// Not fatal: delete what discovery did return.
		errs = append(errs, err)
		updater.processDiscoverResourcesErr(err)
	}
	d.learnVerbs(resources)
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, resources)
	gvrs, err := discovery.GroupVersionResources(deletable)
	if err != nil {
		errs = append(errs, err)
		updater.processGroupVersionErr(err)
	}
	ordered := make([]schema.GroupVersionResource, 0, len(gvrs))
	for gvr := range gvrs {
		if gvr != podsGVR {
			ordered = append(ordered, gvr)
		}
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].String() < ordered[j].String() })
	if _, ok := gvrs[podsGVR]; ok {
		ordered = append([]schema.GroupVersionResource{podsGVR}, ordered...)
	}

	totals := contentTotals{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	estimate := int64(0)
	for _, gvr := range ordered {
		result, err := d.deleteAllContentForResource(ctx, gvr, ns)
		if err != nil {
			errs = append(errs, err)
			updater.processDeleteContentErr(err)
		}
		estimate = max(estimate, result.estimate)
		if result.remaining > 0 {
			totals.remaining[gvr] = result.remaining
			for f, n := range result.finalizers {
				totals.finalizers[f] += n
			}
		}
		if gvr == podsGVR && (result.remaining > 0 || err != nil) {
			// Everything else waits until the pods are gone.
			break
		}
	}
	updater.processContentTotals(totals)
	// Always write the conditions: a condition that failed before and
	// succeeds now must say so.
	if updater.update(&ns.Status) {
		if _, err := d.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			d.log.Warn("cannot update the status conditions of a namespace", "namespace", ns.Name, "err", err)
		}
	}
	return estimate, errors.Join(errs...)
}

// learnVerbs records which resources offer neither list nor
// deletecollection, from discovery.
func (d *deleter) learnVerbs(lists []*metav1.APIResourceList) {
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			verbs := map[string]bool{}
			for _, v := range r.Verbs {
				verbs[v] = true
			}
			for _, op := range []string{"list", "deletecollection"} {
				if !verbs[op] {
					d.setUnsupported(operationKey{op, gv.WithResource(r.Name)})
				}
			}
		}
	}
}

func (d *deleter) supported(key operationKey) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return !d.unsupported[key]
}

func (d *deleter) setUnsupported(key operationKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unsupported[key] = true
}
