package statefulset

import (
	"context"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/controller"
)

// maxBatch caps how many pods a Parallel set creates, updates or deletes
// at once.
const maxBatch = 500

// round is one reconcile of a set: its pods split by ordinal, the
// revisions, and the status being computed.
type round struct {
	set        *appsv1.StatefulSet
	currentSet *appsv1.StatefulSet // set with the current revision's template
	updateSet  *appsv1.StatefulSet // set with the update revision's template
	current    *appsv1.ControllerRevision
	update     *appsv1.ControllerRevision
	// replicas holds, at index ordinal-start, the pod of each ordinal the
	// set should run; a pod not yet created has no status.phase.
	replicas []*corev1.Pod
	// condemned are the pods whose ordinals are out of range, highest
	// ordinal first.
	condemned []*corev1.Pod
	// monotonic is OrderedReady: one pod at a time, in order, waiting for
	// each to be available.
	monotonic bool
	now       time.Time
	status    appsv1.StatefulSetStatus
}

// reconcile creates, fixes and deletes pods so that set converges on its
// spec, and returns the status to record. A non-nil status comes with any
// error once the revisions are known, so status is written even then.
func (c *Controller) reconcile(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod,
	current, update *appsv1.ControllerRevision, collisions int32, now time.Time) (*appsv1.StatefulSetStatus, error) {
	r, err := newRound(set, pods, current, update, collisions, now)
	if err != nil {
		return nil, err
	}
	return &r.status, c.converge(ctx, r)
}

func newRound(set *appsv1.StatefulSet, pods []*corev1.Pod, current, update *appsv1.ControllerRevision, collisions int32, now time.Time) (*round, error) {
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return nil, err
	}
	updateSet, err := applyRevision(set, update)
	if err != nil {
		return nil, err
	}
	r := &round{
		set: set, currentSet: currentSet, updateSet: updateSet,
		current: current, update: update,
		replicas:  make([]*corev1.Pod, replicasOf(set)),
		monotonic: set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement,
		now:       now,
		status: appsv1.StatefulSetStatus{
			ObservedGeneration: set.Generation,
			CurrentRevision:    current.Name,
			UpdateRevision:     update.Name,
			CollisionCount:     &collisions,
			Conditions:         append([]appsv1.StatefulSetCondition(nil), set.Status.Conditions...),
		},
	}
	start := startOrdinal(set)
	for _, p := range pods {
		switch {
		case inOrdinalRange(set, p):
			r.replicas[ordinalOf(p)-start] = p
		case ordinalOf(p) >= 0:
			r.condemned = append(r.condemned, p)
		}
	}
	for i := range r.replicas {
		if r.replicas[i] == nil {
			r.replicas[i] = r.versionedPod(start + i)
		}
	}
	sort.SliceStable(r.condemned, func(i, j int) bool { return ordinalOf(r.condemned[i]) > ordinalOf(r.condemned[j]) })
	return r, nil
}

// versionedPod builds the missing pod of ordinal: ordinals below the
// partition get the current revision, the others the update revision.
func (r *round) versionedPod(ordinal int) *corev1.Pod {
	strategy := r.currentSet.Spec.UpdateStrategy
	useCurrent := false
	switch {
	case strategy.RollingUpdate != nil && strategy.RollingUpdate.Partition != nil:
		useCurrent = ordinal < startOrdinal(r.set)+int(*strategy.RollingUpdate.Partition)
	case strategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && strategy.RollingUpdate == nil:
		useCurrent = ordinal < startOrdinal(r.set)+int(r.currentSet.Status.CurrentReplicas)
	}
	if useCurrent {
		return newPod(r.currentSet, ordinal, r.current.Name)
	}
	return newPod(r.updateSet, ordinal, r.update.Name)
}

// converge does the work of one round: replace failed pods, create missing
// ones, fix identities and claims, delete condemned pods, then roll
// updates. OrderedReady stops at the first pod that is not yet available.
// It counts the pods into r.status before any rolling-update deletion,
// which then counts itself out of currentReplicas, as upstream does.
func (c *Controller) converge(ctx context.Context, r *round) error {
	stop, err := c.scale(ctx, r)
	r.countPods()
	if stop || err != nil || r.set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return err
	}
	return c.rollingUpdate(ctx, r)
}

// scale processes the replicas, then the claims of condemned pods, then
// the condemned pods themselves. It returns true when the round must stop.
func (c *Controller) scale(ctx context.Context, r *round) (bool, error) {
	if r.set.DeletionTimestamp != nil {
		return true, nil
	}
	processReplica := func(i int) (bool, error) { return c.processReplica(ctx, r, i) }
	if stop, err := forAll(r.replicas, processReplica, r.monotonic); stop || err != nil {
		return true, err
	}
	fixClaims := func(i int) (bool, error) {
		ok, err := c.claimOwnersMatch(r.updateSet, r.condemned[i])
		if err == nil && !ok {
			err = c.fixClaimOwners(ctx, r.updateSet, r.condemned[i])
		}
		return err != nil, err
	}
	if stop, err := forAll(r.condemned, fixClaims, r.monotonic); stop || err != nil {
		return true, err
	}
	firstUnavailable := r.firstUnavailable()
	processCondemned := func(i int) (bool, error) { return c.processCondemned(ctx, r, firstUnavailable, i) }
	return forAll(r.condemned, processCondemned, r.monotonic)
}

// processReplica brings the pod at index i to what the set wants. It
// returns true when the round must stop here (OrderedReady waiting, or an
// error).
func (c *Controller) processReplica(ctx context.Context, r *round, i int) (bool, error) {
	pod := r.replicas[i]
	// A failed or succeeded pod (evicted, its node rebooted, …) is replaced:
	// delete it now, recreate it when it is gone.
	if isTerminalPhase(pod) {
		if pod.DeletionTimestamp == nil {
			if err := c.deletePod(ctx, r.set, pod); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if !isCreated(pod) {
		if stale, err := c.claimIsStale(r.set, pod); err != nil || stale {
			return true, err
		}
		if err := c.createPod(ctx, r.set, pod); err != nil {
			return true, err
		}
		if r.monotonic {
			return true, nil
		}
	}
	if pod.Status.Phase == corev1.PodPending {
		if err := c.createClaims(ctx, r.set, pod); err != nil {
			return true, err
		}
		if err := c.fixClaimOwners(ctx, r.set, pod); err != nil {
			c.recordPodEvent("update", r.set, pod, err)
			return true, err
		}
	}
	if r.monotonic && (isTerminating(pod) || !isRunningAndReady(pod) || !controller.PodAvailable(pod, r.set.Spec.MinReadySeconds, r.now)) {
		return true, nil
	}
	if !isCreated(pod) {
		return false, nil // just created (Parallel); fixed up next round
	}
	ownersOK, err := c.claimOwnersMatch(r.updateSet, pod)
	if err != nil {
		ownersOK = true // the pod is not fully updated yet; try later
	}
	if identityMatches(r.set, pod) && storageMatches(r.set, pod) && ownersOK {
		return false, nil
	}
	if err := c.updatePod(ctx, r.updateSet, pod); err != nil {
		return true, err
	}
	return false, nil
}

// firstUnavailable is the first pod, by ordinal, that is not available:
// among the replicas, else among the condemned (lowest ordinal first).
func (r *round) firstUnavailable() *corev1.Pod {
	for _, p := range r.replicas {
		if isUnavailable(p, r.set.Spec.MinReadySeconds, r.now) {
			return p
		}
	}
	for i := len(r.condemned) - 1; i >= 0; i-- {
		if isUnavailable(r.condemned[i], r.set.Spec.MinReadySeconds, r.now) {
			return r.condemned[i]
		}
	}
	return nil
}

// processCondemned deletes the out-of-range pod at index i. OrderedReady
// deletes one at a time from the highest ordinal, waits for it to be gone,
// and deletes an unavailable pod only if it is the first unavailable one.
func (c *Controller) processCondemned(ctx context.Context, r *round, firstUnavailable *corev1.Pod, i int) (bool, error) {
	pod := r.condemned[i]
	if isTerminating(pod) {
		return r.monotonic, nil
	}
	if r.monotonic && pod != firstUnavailable &&
		(!isRunningAndReady(pod) || !controller.PodAvailable(pod, r.set.Spec.MinReadySeconds, r.now)) {
		return true, nil
	}
	c.log.Debug("deleting pod for scale down", "statefulset", controller.Key(r.set), "pod", pod.Name)
	return true, c.deletePod(ctx, r.set, pod)
}

// rollingUpdate deletes pods that run an old revision, from the highest
// ordinal down to the partition, so that they are recreated at the update
// revision, keeping at most maxUnavailable pods unavailable (the
// MaxUnavailableStatefulSet behaviour, on by default in Kubernetes 1.37).
func (c *Controller) rollingUpdate(ctx context.Context, r *round) error {
	set := r.set
	partition := 0
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		var err error
		if maxUnavailable, err = maxUnavailableOf(ru.MaxUnavailable, replicasOf(set)); err != nil {
			return err
		}
	}
	minReady := set.Spec.MinReadySeconds
	unavailable, unavailableOld := 0, 0
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	for _, p := range r.replicas {
		if isUnavailable(p, minReady, r.now) {
			unavailable++
			if parallel && revisionOf(p) != r.update.Name && !isTerminating(p) {
				unavailableOld++
			}
		}
	}
	if unavailable >= maxUnavailable && unavailableOld == 0 {
		return nil
	}
	old := func(p *corev1.Pod) bool { return revisionOf(p) != r.update.Name && !isTerminating(p) }
	if parallel {
		// Old pods that are unavailable anyway go first, so the budget is
		// not spent on good pods while broken ones stay old.
		for t := len(r.replicas) - 1; t >= partition; t-- {
			if p := r.replicas[t]; old(p) && !controller.PodAvailable(p, minReady, r.now) {
				if err := c.deleteForUpdate(ctx, r, p); err != nil {
					return err
				}
			}
		}
	}
	budget := maxUnavailable - unavailable
	for t := len(r.replicas) - 1; t >= partition && budget > 0; t-- {
		p := r.replicas[t]
		if !old(p) || (parallel && isUnavailable(p, minReady, r.now)) {
			continue
		}
		if err := c.deleteForUpdate(ctx, r, p); err != nil {
			return err
		}
		budget--
	}
	return nil
}

func (c *Controller) deleteForUpdate(ctx context.Context, r *round, pod *corev1.Pod) error {
	c.log.Debug("deleting pod for update", "statefulset", controller.Key(r.set), "pod", pod.Name, "revision", r.update.Name)
	if err := c.deletePod(ctx, r.set, pod); err != nil {
		return err
	}
	r.status.CurrentReplicas--
	return nil
}

// maxUnavailableOf resolves rollingUpdate.maxUnavailable (a number or a
// percentage of replicas, rounded down; default 1) to at least 1.
func maxUnavailableOf(v *intstr.IntOrString, replicas int) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(v, intstr.FromInt32(1)), replicas, false)
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}

// forAll runs fn on each index of pods: in order, stopping at the first
// that asks to stop, when monotonic; otherwise all of them, in slow-start
// batches. It returns whether the round must stop.
func forAll(pods []*corev1.Pod, fn func(i int) (bool, error), monotonic bool) (bool, error) {
	if monotonic {
		for i := range pods {
			if stop, err := fn(i); stop || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	if err := slowStartBatch(len(pods), fn); err != nil {
		return true, err
	}
	return false, nil
}

// slowStartBatch calls fn for indexes 0..n-1 in concurrent batches of 1,
// 2, 4, … (at most maxBatch), stopping after a batch with errors.
func slowStartBatch(n int, fn func(i int) (bool, error)) error {
	next := 0
	for batch := min(n, 1); batch > 0; batch = min(2*batch, n-next, maxBatch) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for j := 0; j < batch; j++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if _, err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}(next + j)
		}
		wg.Wait()
		next += batch
		if len(errs) > 0 {
			return utilerrors.NewAggregate(errs)
		}
	}
	return nil
}

func isCreated(pod *corev1.Pod) bool { return pod.Status.Phase != "" }

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func isTerminalPhase(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && controller.PodReady(pod)
}

func isUnavailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return !controller.PodAvailable(pod, minReadySeconds, now) || isTerminating(pod)
}
