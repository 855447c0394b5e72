package scheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-helpers/storage/volume"

	fw "orch/internal/scheduler/framework"
	"orch/internal/scheduler/plugins"
)

// preempt evicts the victims of a preemption gracefully (DisruptionTarget
// condition, then delete, then a Preempted event), and clears the
// nomination of lower-priority pods nominated to the same node.
func (s *Scheduler) preempt(ctx context.Context, pod *v1.Pod, cand *fw.Candidate) {
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
		Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", pod.Spec.SchedulerName)}
	for _, victim := range cand.Victims {
		err := s.updateStatus(ctx, victim, func(p *v1.Pod) bool {
			return setCondition(&p.Status, cond, metav1.NewTime(s.clock.Now()), p.Generation)
		})
		if err == nil {
			err = s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("cannot preempt", "pod", victim.Namespace+"/"+victim.Name, "preemptor", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		s.log.Info("preempted", "pod", victim.Namespace+"/"+victim.Name, "preemptor", pod.Namespace+"/"+pod.Name, "node", cand.Node)
		s.recorder.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", pod.UID, cand.Node)
	}
	var lower []*v1.Pod
	prio := fw.NewPodInfo(pod).Priority
	s.cache.locked(func(snap *fw.Snapshot) {
		for _, np := range snap.NominatedPods(cand.Node) {
			if np.Priority < prio {
				lower = append(lower, np.Pod)
			}
		}
	})
	for _, p := range lower {
		_ = s.updateStatus(ctx, p, func(cur *v1.Pod) bool {
			if cur.Status.NominatedNodeName == "" {
				return false
			}
			cur.Status.NominatedNodeName = ""
			return true
		})
	}
}

// bindTimeout is how long binding waits for the pod's claims to be bound
// (upstream's default bindTimeoutSeconds).
const bindTimeout = 600 * time.Second

// bindVolumes carries out a volume plan before the pod is bound: it binds
// the chosen PersistentVolumes to their claims, marks claims to provision
// with the selected node, and waits until every claim is bound.
func (s *Scheduler) bindVolumes(ctx context.Context, pod *v1.Pod, plan *plugins.VolumePlan) error {
	if plan == nil || (len(plan.Bind) == 0 && len(plan.Provision) == 0) {
		return nil
	}
	for pvc, pv := range plan.Bind {
		bound, dirty, err := volume.GetBindVolumeToClaim(pv, pvc)
		if err == nil && dirty {
			_, err = s.client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("bind PersistentVolume %q to claim %q: %w", pv.Name, pvc.Name, err)
		}
	}
	for _, pvc := range plan.Provision {
		if pvc.Annotations[volume.AnnSelectedNode] == pod.Spec.NodeName {
			continue
		}
		c := pvc.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[volume.AnnSelectedNode] = pod.Spec.NodeName
		if _, err := s.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("select node for claim %q: %w", c.Name, err)
		}
	}
	claims := map[string]bool{}
	for pvc := range plan.Bind {
		claims[pvc.Name] = true
	}
	for _, pvc := range plan.Provision {
		claims[pvc.Name] = true
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, bindTimeout, true, func(ctx context.Context) (bool, error) {
		for name := range claims {
			pvc, err := s.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || pvc.Spec.VolumeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
}
