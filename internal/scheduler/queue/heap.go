package queue

import (
	"container/heap"
	"time"
)

// podHeap is a container/heap of queued pods ordered by less.
type podHeap struct {
	items []*QueuedPod
	less  func(a, b *QueuedPod) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPod)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	last := len(h.items) - 1
	qp := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	qp.index = -1
	return qp
}
func (h *podHeap) fix(qp *QueuedPod) { heap.Fix(h, qp.index) }

func (q *Queue) heapOf(p place) *podHeap {
	if p == inBackoff {
		return &q.backoff
	}
	return &q.active
}

// push puts a pod into the active or backoff heap.
func (q *Queue) push(qp *QueuedPod, to place) {
	if to == inBackoff {
		q.backoffAt(qp)
	}
	qp.where = to
	heap.Push(q.heapOf(to), qp)
	if to == inActive {
		q.cond.Signal()
	}
}

// remove takes a pod out of whichever heap holds it.
func (q *Queue) remove(qp *QueuedPod) {
	switch qp.where {
	case inActive, inBackoff:
		heap.Remove(q.heapOf(qp.where), qp.index)
	case inUnschedulable:
		delete(q.unsched, qp.Pod.UID)
	}
	qp.where = nowhere
}

// requeue sends an unschedulable pod to backoff, or to active when its
// backoff is over.
func (q *Queue) requeue(qp *QueuedPod) {
	q.remove(qp)
	if q.backoffAt(qp).After(q.clock.Now()) {
		q.push(qp, inBackoff)
	} else {
		q.push(qp, inActive)
	}
}

// backoffAt is when the pod's backoff ends: InitialBackoff doubled for
// each failure after the first, at most MaxBackoff, from its Timestamp.
func (q *Queue) backoffAt(qp *QueuedPod) time.Time {
	if !qp.backoffAt.IsZero() {
		return qp.backoffAt
	}
	count := qp.UnschedulableCount
	if qp.ConsecutiveErrors > 0 {
		count = qp.ConsecutiveErrors
	}
	if count == 0 {
		return time.Time{}
	}
	d := q.InitialBackoff
	for i := 1; i < count && d < q.MaxBackoff; i++ {
		d *= 2
	}
	qp.backoffAt = qp.Timestamp.Add(min(d, q.MaxBackoff))
	return qp.backoffAt
}
