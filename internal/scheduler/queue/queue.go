// Package queue is the scheduler's priority queue of pods waiting for a
// node, shaped as upstream's: an active heap (higher priority first, then
// the earlier arrival), a backoff heap for pods that failed recently
// (1 s doubling up to 10 s by default), and a set of unschedulable pods
// that wait for a change in the cluster (MoveAll) or at most five minutes.
// Time comes from an injected clock.
package queue

import (
	"container/heap"
	"context"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Upstream's defaults.
const (
	DefaultInitialBackoff   = 1 * time.Second
	DefaultMaxBackoff       = 10 * time.Second
	DefaultMaxUnschedulable = 5 * time.Minute
)

// QueuedPod is a pod in the queue with its scheduling history.
type QueuedPod struct {
	Pod *v1.Pod
	// Timestamp is when the pod last entered the queue.
	Timestamp time.Time
	// Attempts counts the scheduling cycles the pod went through.
	Attempts           int
	UnschedulableCount int
	ConsecutiveErrors  int
	// Plugins names the plugins that rejected the pod last time (set by
	// the scheduler before AddUnschedulable; MoveAll's match reads it).
	Plugins map[string]bool

	where     place
	index     int
	popCycle  int64
	deleted   bool
	backoffAt time.Time
}

type place int

const (
	nowhere place = iota
	inActive
	inBackoff
	inUnschedulable
	inFlight
)

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// Queue is safe for concurrent use.
type Queue struct {
	InitialBackoff, MaxBackoff, MaxUnschedulable time.Duration

	mu        sync.Mutex
	cond      *sync.Cond
	clock     clock.WithTicker
	active    podHeap
	backoff   podHeap
	pods      map[types.UID]*QueuedPod
	unsched   map[types.UID]*QueuedPod
	moveCycle int64
	closed    bool
}

// New returns an empty queue with upstream's default durations.
func New(clk clock.WithTicker) *Queue {
	q := &Queue{InitialBackoff: DefaultInitialBackoff, MaxBackoff: DefaultMaxBackoff, MaxUnschedulable: DefaultMaxUnschedulable,
		clock: clk, pods: map[types.UID]*QueuedPod{}, unsched: map[types.UID]*QueuedPod{}}
	q.cond = sync.NewCond(&q.mu)
	q.active.less = func(a, b *QueuedPod) bool {
		if pa, pb := priority(a.Pod), priority(b.Pod); pa != pb {
			return pa > pb
		}
		return a.Timestamp.Before(b.Timestamp)
	}
	q.backoff.less = func(a, b *QueuedPod) bool { return a.backoffAt.Before(b.backoffAt) }
	return q
}

// Add queues a new pod, or updates it if it is already known.
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.pods[pod.UID]; ok {
		q.update(qp, pod)
		return
	}
	qp := &QueuedPod{Pod: pod, Timestamp: q.clock.Now()}
	q.pods[pod.UID] = qp
	q.push(qp, inActive)
}

// Update gives the queue a newer version of a pod. An unschedulable pod
// whose spec, labels or annotations changed is tried again.
func (q *Queue) Update(pod *v1.Pod) { q.Add(pod) }

func (q *Queue) update(qp *QueuedPod, pod *v1.Pod) {
	old := qp.Pod
	qp.Pod = pod
	switch qp.where {
	case inActive, inBackoff:
		q.heapOf(qp.where).fix(qp)
	case inUnschedulable:
		if changed(old, pod) {
			q.requeue(qp)
		}
	}
}

// changed tells an update worth another try: anything but the status and
// bookkeeping metadata.
func changed(a, b *v1.Pod) bool {
	strip := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion, c.Generation, c.ManagedFields, c.Status = "", 0, nil, v1.PodStatus{}
		return c
	}
	return !reflect.DeepEqual(strip(a), strip(b))
}

// Delete forgets a pod (deleted, or bound by someone else).
func (q *Queue) Delete(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.pods[uid]
	if !ok {
		return
	}
	qp.deleted = true
	q.remove(qp)
	delete(q.pods, uid)
}

// Pop blocks until a pod is active, and hands it out; false once closed.
func (q *Queue) Pop() (*QueuedPod, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, false
	}
	qp := heap.Pop(&q.active).(*QueuedPod)
	qp.where = inFlight
	qp.Attempts++
	qp.popCycle = q.moveCycle
	return qp, true
}

// Done forgets a popped pod that got a node.
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.pods[uid]; ok && qp.where == inFlight {
		delete(q.pods, uid)
	}
}

// AddUnschedulable takes back a popped pod that found no node (err false)
// or met an error (err true). Errors back off at once; an unschedulable
// pod waits for MoveAll, unless the cluster changed while it was out.
func (q *Queue) AddUnschedulable(qp *QueuedPod, err bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp.deleted || q.pods[qp.Pod.UID] != qp {
		return
	}
	qp.Timestamp = q.clock.Now()
	qp.backoffAt = time.Time{}
	if err {
		qp.ConsecutiveErrors++
		q.push(qp, inBackoff)
		return
	}
	qp.UnschedulableCount++
	qp.ConsecutiveErrors = 0
	if q.moveCycle > qp.popCycle {
		q.requeue(qp)
		return
	}
	qp.where = inUnschedulable
	q.unsched[qp.Pod.UID] = qp
}

// MoveAll sends the unschedulable pods that match (all when match is
// nil) back, to backoff if their backoff has not ended: something changed
// in the cluster that may let them fit.
func (q *Queue) MoveAll(match func(*QueuedPod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle++
	for _, qp := range q.unsched {
		if match == nil || match(qp) {
			q.requeue(qp)
		}
	}
}

// Flush moves pods whose backoff ended to active, and pods unschedulable
// for longer than MaxUnschedulable back.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for q.backoff.Len() > 0 && !q.backoff.items[0].backoffAt.After(now) {
		qp := heap.Pop(&q.backoff).(*QueuedPod)
		q.push(qp, inActive)
	}
	for _, qp := range q.unsched {
		if now.Sub(qp.Timestamp) > q.MaxUnschedulable {
			q.requeue(qp)
		}
	}
}

// Run flushes every second until ctx ends, then closes the queue.
func (q *Queue) Run(ctx context.Context) {
	t := q.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-t.C():
			q.Flush()
		}
	}
}

// Close wakes Pop for good.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Len counts the pods active, backing off, and unschedulable.
func (q *Queue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unsched)
}
