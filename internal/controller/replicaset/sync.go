package replicaset

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
)

// slowStartInitialBatch is the size of the first batch of creates; each
// successful batch doubles the next.
const slowStartInitialBatch = 1

// sync reconciles the object with key: claim pods, resize if the last
// resize has been observed, write status, and plan the next availability
// check when minReadySeconds is pending.
func (m *manager) sync(ctx context.Context, key string) error {
	start := m.clock.Now()
	defer func() { m.log.Debug("synced", "key", key, "took", m.clock.Since(start)) }()
	if _, _, err := cache.SplitMetaNamespaceKey(key); err != nil {
		return nil // not a key we produce; nothing to retry
	}
	rs, ok := m.get(key)
	if !ok {
		m.exp.Forget(key)
		return nil
	}
	canResize := m.exp.Satisfied(key)
	selector := selectorOf(rs)
	all, err := m.podsOwnedOrOrphaned(rs)
	if err != nil {
		return err
	}
	active, err := m.claimPods(ctx, rs, selector, filterPods(all, isPodActive))
	if err != nil {
		return err
	}
	var terminating []*corev1.Pod
	if m.kind.terminatingReplicas {
		terminating = controlledAndSelected(rs, selector, filterPods(all, isPodTerminating))
	}
	var manageErr error
	if canResize && rs.DeletionTimestamp == nil {
		manageErr = m.manageReplicas(ctx, rs, active)
	}
	rs = rs.DeepCopy()
	now := m.clock.Now()
	status := calculateStatus(rs, active, terminating, manageErr, m.kind.terminatingReplicas, now)
	updated, err := m.updateStatus(ctx, rs, status)
	if err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if updated.Spec.MinReadySeconds > 0 && updated.Status.ReadyReplicas != updated.Status.AvailableReplicas {
		next := time.Duration(updated.Spec.MinReadySeconds) * time.Second
		if d, ok := controller.NextAvailabilityCheck(active, updated.Spec.MinReadySeconds, now, m.clock.Now()); ok {
			next = d
		}
		m.delay.After(key, next)
	}
	return nil
}

// manageReplicas creates or deletes pods so that active matches
// spec.replicas, at most burstReplicas at a time.
func (m *manager) manageReplicas(ctx context.Context, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	key := controller.Key(rs)
	diff := len(active) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		m.exp.Expect(key, n, nil)
		m.log.Debug("too few replicas", "owner", key, "need", *rs.Spec.Replicas, "creating", n)
		done, err := slowStartBatch(n, slowStartInitialBatch, func() error {
			err := m.createPod(ctx, rs)
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // every create will fail; nothing to report
			}
			return err
		})
		// Creates never attempted will never be observed.
		for i := done; i < n; i++ {
			m.exp.CreationObserved(key)
		}
		return err
	case diff > 0:
		n := min(diff, burstReplicas)
		m.log.Debug("too many replicas", "owner", key, "need", *rs.Spec.Replicas, "deleting", n)
		related, err := m.relatedPods(rs)
		if err != nil {
			m.log.Info("listing related pods failed; ranking without them", "owner", key, "err", err)
		}
		victims := podsToDelete(active, related, n, m.clock.Now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = controller.Key(p)
		}
		m.exp.Expect(key, 0, keys)
		errs := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.deletePod(ctx, rs, p.Name); err != nil {
					// This deletion will never be observed.
					m.exp.DeletionObserved(key, controller.Key(p))
					if !apierrors.IsNotFound(err) {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
		}
	}
	return nil
}

// slowStartBatch calls fn count times: first initial calls at once, then
// twice as many, and so on, stopping after the first batch with an error.
// It returns how many calls succeeded.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for i := 0; i < batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}

func filterPods(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// controlledAndSelected keeps the pods rs controls that its selector
// matches.
func controlledAndSelected(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.UID == rs.UID && selector.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
