package scheduler

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	fw "orch/internal/scheduler/framework"
	"orch/internal/scheduler/plugins"
	"orch/internal/scheduler/queue"
)

// noteLengthLimit is the longest event message upstream keeps.
const noteLengthLimit = 1024

// scheduleOne runs one scheduling cycle; false once the queue is closed.
func (s *Scheduler) scheduleOne(ctx context.Context) bool {
	qp, ok := s.queue.Pop()
	if !ok {
		return false
	}
	pod := qp.Pod
	log := s.log.With("pod", pod.Namespace+"/"+pod.Name)
	s.cache.mu.Lock()
	if _, taken := s.cache.snap.HasPod(pod.UID); taken {
		// Assumed or bound already: an update raced with the binding.
		s.cache.mu.Unlock()
		s.queue.Done(pod.UID)
		return true
	}
	res, err := s.fw.Schedule(pod, s.cache.snap)
	if err == nil {
		var plan *plugins.VolumePlan
		var planErr error
		if n := s.cache.snap.Get(res.Node); n != nil {
			plan, planErr = plugins.PlanVolumes(pod, n.Node, s.cache.snap)
		}
		if planErr == nil {
			assumed := s.cache.assume(pod, res.Node)
			s.cache.mu.Unlock()
			log.Debug("scheduled", "node", res.Node, "evaluated", res.Evaluated, "feasible", res.Feasible)
			s.async(func() { s.bind(ctx, qp, assumed, plan) })
			return true
		}
		err = planErr
	}
	var fitErr *fw.FitError
	if !errors.As(err, &fitErr) {
		s.cache.mu.Unlock()
		reason, isErr := v1.PodReasonSchedulerError, true
		if errors.Is(err, fw.ErrNoNodesAvailable) {
			reason, isErr = v1.PodReasonUnschedulable, false // waits for a node
		}
		log.Warn("cannot schedule", "err", err)
		qp.Plugins = nil
		s.queue.AddUnschedulable(qp, isErr)
		s.async(func() { s.reportFailure(ctx, pod, reason, err.Error(), new(string)) })
		return true
	}
	var cand *fw.Candidate
	keep := s.DisablePreemption
	if !s.DisablePreemption {
		cand, fitErr.Diagnosis.PostFilterMsg, keep = s.fw.Preempt(pod, s.cache.snap, fitErr.Diagnosis)
		if cand != nil {
			s.cache.snap.Nominate(pod, cand.Node)
		}
	}
	s.cache.mu.Unlock()
	msg := fitErr.Error()
	log.Info("unschedulable", "reason", msg)
	qp.Plugins = fitErr.Diagnosis.UnschedulablePlugins
	s.queue.AddUnschedulable(qp, false)
	nominated := new(string) // cleared, unless preemption nominates or keeps
	if cand != nil {
		*nominated = cand.Node
		s.async(func() { s.preempt(ctx, pod, cand) })
	} else if keep {
		nominated = nil
	}
	s.async(func() { s.reportFailure(ctx, pod, v1.PodReasonUnschedulable, msg, nominated) })
	return true
}

func (s *Scheduler) async(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// bind binds the assumed pod (after its volumes) through pods/binding; on
// failure the pod goes back to the queue.
func (s *Scheduler) bind(ctx context.Context, qp *queue.QueuedPod, pod *v1.Pod, plan *plugins.VolumePlan) {
	err := s.bindVolumes(ctx, pod, plan)
	if err == nil {
		err = s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: pod.Spec.NodeName},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		s.log.Warn("binding failed", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "err", err)
		s.cache.forget(pod.UID)
		s.move(podDelete)
		s.queue.AddUnschedulable(qp, true)
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			s.reportFailure(ctx, pod, v1.PodReasonSchedulerError, err.Error(), new(string))
		}
		return
	}
	s.queue.Done(pod.UID)
	s.recorder.Eventf(pod, v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
}

// reportFailure writes the FailedScheduling event and the PodScheduled=False
// condition (with the nominated node when nominated is not nil).
func (s *Scheduler) reportFailure(ctx context.Context, pod *v1.Pod, reason, msg string, nominated *string) {
	if len(msg) > noteLengthLimit {
		msg = msg[:noteLengthLimit-4] + " ..."
	}
	s.recorder.Event(pod, v1.EventTypeWarning, "FailedScheduling", msg)
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg}
	err := s.updateStatus(ctx, pod, func(p *v1.Pod) bool {
		if p.Spec.NodeName != "" {
			return false
		}
		changed := setCondition(&p.Status, cond, metav1.NewTime(s.clock.Now()), p.Generation)
		if nominated != nil && p.Status.NominatedNodeName != *nominated {
			p.Status.NominatedNodeName = *nominated
			changed = true
		}
		return changed
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("cannot update pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// updateStatus applies mutate to the current pod and writes its status,
// again on conflict.
func (s *Scheduler) updateStatus(ctx context.Context, pod *v1.Pod, mutate func(*v1.Pod) bool) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur *v1.Pod
		var err error
		if first {
			cur, err = s.pods.Pods(pod.Namespace).Get(pod.Name)
			first = false
		} else {
			cur, err = s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		cur = cur.DeepCopy()
		if !mutate(cur) {
			return nil
		}
		_, err = s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// setCondition sets a condition as upstream's UpdatePodCondition does;
// false when nothing changed.
func setCondition(st *v1.PodStatus, c v1.PodCondition, now metav1.Time, generation int64) bool {
	c.LastTransitionTime = now
	c.ObservedGeneration = generation
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
			return false
		}
		*old = c
		return true
	}
	st.Conditions = append(st.Conditions, c)
	return true
}
