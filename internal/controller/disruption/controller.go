package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

const (
	// component is upstream's event source for this controller.
	component = "controllermanager"
	// deletionTimeout is how long an evicted pod may stay in
	// status.disruptedPods without starting to terminate.
	deletionTimeout = 2 * time.Minute
	// staleDisruptionTimeout is how long a pod may carry DisruptionTarget=True
	// without being deleted before the condition is reset.
	staleDisruptionTimeout = 2 * time.Minute
)

// Controller keeps the status of PodDisruptionBudgets.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	log      *slog.Logger
	clock    clock.Clock
	pdbs     policylisters.PodDisruptionBudgetLister
	pods     corelisters.PodLister
	finders  finders
	synced   []cache.InformerSynced

	queue      workqueue.TypedRateLimitingInterface[string] // budget keys
	staleQueue workqueue.TypedRateLimitingInterface[string] // pod keys
	recheck    *controller.Delayer
	staleAfter *controller.Delayer
	done       chan struct{}
}

// New builds the controller and registers its informers on ctx.Informers.
func New(ctx controller.Context) *Controller {
	core, apps := ctx.Informers.Core().V1(), ctx.Informers.Apps().V1()
	pdbs := ctx.Informers.Policy().V1().PodDisruptionBudgets()
	c := &Controller{
		client: ctx.Client, recorder: ctx.Recorder(component), log: ctx.Log.With("controller", "disruption"), clock: ctx.Clock,
		pdbs: pdbs.Lister(), pods: core.Pods().Lister(),
		finders: finders{rcs: core.ReplicationControllers().Lister(), replicaSets: apps.ReplicaSets().Lister(),
			deployments: apps.Deployments().Lister(), statefulSets: apps.StatefulSets().Lister()},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "disruption"}),
		staleQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "stale_pod_disruption"}),
		done: make(chan struct{}),
	}
	c.recheck = controller.NewDelayer(ctx.Clock, c.queue.Add, c.done)
	c.staleAfter = controller.NewDelayer(ctx.Clock, c.staleQueue.Add, c.done)
	pdbs.Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	core.Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(old, cur any) { c.enqueueBudgetsOf(old); c.podChanged(cur) },
		DeleteFunc: func(obj any) { c.enqueueBudgetsOf(obj) },
	})
	for _, informer := range []cache.SharedIndexInformer{pdbs.Informer(), core.Pods().Informer(), core.ReplicationControllers().Informer(),
		apps.ReplicaSets().Informer(), apps.Deployments().Informer(), apps.StatefulSets().Informer()} {
		c.synced = append(c.synced, informer.HasSynced)
	}
	return c
}

// Start runs the budget and stale-condition workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	stale := make(chan error, 1)
	go func() {
		stale <- worker.Run(ctx, c.staleQueue, worker.Errors(c.syncStalePod), worker.Options{Synced: c.synced, Log: c.log})
	}()
	err := worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: c.synced, Log: c.log})
	if staleErr := <-stale; err == nil {
		err = staleErr
	}
	return err
}

// podChanged queues the budgets that select pod (warning when there are
// several), and the pod itself when it carries a DisruptionTarget condition
// that may go stale.
func (c *Controller) podChanged(obj any) {
	pod := c.enqueueBudgetsOf(obj)
	if pod == nil {
		return
	}
	if budgets := c.budgetsFor(pod); len(budgets) > 1 {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets",
			"Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", pod.Namespace, pod.Name, budgets[0].Name)
	}
	if stale, after := c.staleDisruptionCondition(pod); stale {
		c.staleAfter.After(pod.Namespace+"/"+pod.Name, after)
	}
}

// enqueueBudgetsOf queues every budget that selects the pod obj and
// returns the pod (nil for anything else).
func (c *Controller) enqueueBudgetsOf(obj any) *corev1.Pod {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return nil
	}
	for _, pdb := range c.budgetsFor(pod) {
		c.queue.Add(pdb.Namespace + "/" + pdb.Name)
	}
	return pod
}

// budgetsFor lists the budgets of pod's namespace whose selector matches it.
func (c *Controller) budgetsFor(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	all, err := c.pdbs.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range all {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pdb, err := c.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.trySync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	c.log.Warn("budget status could not be computed; allowing no disruptions", "pdb", key, "err", err)
	return c.failSafe(ctx, pdb, err)
}

func (c *Controller) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	pods, err := c.podsFor(pdb)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return err
	}
	if len(pods) == 0 {
		c.recorder.Eventf(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	counts, err := expectedCounts(pdb.Spec, pods, c.finders.find)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if len(counts.unmanaged) > 0 {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := c.clock.Now()
	disrupted, recheckAt := c.keptDisruptedPods(pdb, pods, now)
	status := newStatus(pdb, counts, currentHealthy(pods, disrupted, now), disrupted)
	if err := c.writeStatus(ctx, pdb, status); err != nil {
		return err
	}
	if !recheckAt.IsZero() {
		c.recheck.After(pdb.Namespace+"/"+pdb.Name, recheckAt.Sub(now))
	}
	return nil
}

// podsFor lists the pods pdb selects.
func (c *Controller) podsFor(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return c.pods.Pods(pdb.Namespace).List(sel)
}

// keptDisruptedPods keeps the status.disruptedPods entries of pods that
// exist, are not terminating yet and were evicted less than
// deletionTimeout ago; it returns when the earliest kept entry expires.
func (c *Controller) keptDisruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Time) {
	kept := map[string]metav1.Time{}
	var recheckAt time.Time
	for _, pod := range pods {
		at, found := pdb.Status.DisruptedPods[pod.Name]
		if !found || pod.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(deletionTimeout)
		if expires.Before(now) {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		kept[pod.Name] = at
		if recheckAt.IsZero() || expires.Before(recheckAt) {
			recheckAt = expires
		}
	}
	return kept, recheckAt
}

// currentHealthy counts the ready pods that are neither terminating nor
// recently evicted.
func currentHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, found := disrupted[pod.Name]; found && at.Add(deletionTimeout).After(now) {
			continue
		}
		if controller.PodReady(pod) {
			n++
		}
	}
	return n
}

// failSafe allows no disruptions when the status could not be computed.
func (c *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	updated := pdb.DeepCopy()
	updated.Status.DisruptionsAllowed = 0
	setCondition(&updated.Status, metav1.ConditionFalse, policyv1.SyncFailedReason, cause.Error())
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("recording that the status of %s/%s could not be computed: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}
