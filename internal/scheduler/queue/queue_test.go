package queue

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "orch/internal/scheduler/schedtest"
)

func newQueue() (*Queue, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	return New(clk), clk
}

func popName(t *testing.T, q *Queue) string {
	t.Helper()
	if a, _, _ := q.Len(); a == 0 {
		t.Fatal("nothing active")
	}
	qp, ok := q.Pop()
	if !ok {
		t.Fatal("queue closed")
	}
	return qp.Pod.Name
}

func TestPriorityThenArrival(t *testing.T) {
	q, clk := newQueue()
	for _, p := range []*v1.Pod{st.Pod("low").Priority(1).Obj(), st.Pod("high").Priority(100).Obj(), st.Pod("none").Obj(), st.Pod("high2").Priority(100).Obj()} {
		q.Add(p)
		clk.Step(time.Millisecond)
	}
	var got []string
	for range 4 {
		got = append(got, popName(t, q))
	}
	if want := []string{"high", "high2", "low", "none"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestBackoffDoublesToTenSeconds(t *testing.T) {
	q, clk := newQueue()
	q.Add(st.Pod("p").Obj())
	var waits []time.Duration
	for range 6 {
		qp, _ := q.Pop()
		q.AddUnschedulable(qp, false)
		q.MoveAll(nil)
		start := clk.Now()
		for a, _, _ := q.Len(); a == 0; a, _, _ = q.Len() {
			clk.Step(100 * time.Millisecond)
			q.Flush()
		}
		waits = append(waits, clk.Now().Sub(start).Round(time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 10, 10}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("backoffs %v, want %v seconds", waits, want)
		}
	}
}

func TestUnschedulableWaitsForAMove(t *testing.T) {
	q, clk := newQueue()
	q.Add(st.Pod("p").Obj())
	qp, _ := q.Pop()
	qp.Plugins = map[string]bool{"NodeResourcesFit": true}
	q.AddUnschedulable(qp, false)
	clk.Step(time.Minute)
	q.Flush()
	if a, b, u := q.Len(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("after a minute: active %d backoff %d unschedulable %d", a, b, u)
	}
	q.MoveAll(func(qp *QueuedPod) bool { return qp.Plugins["TaintToleration"] })
	if _, _, u := q.Len(); u != 1 {
		t.Fatal("an unrelated event moved the pod")
	}
	q.MoveAll(func(qp *QueuedPod) bool { return qp.Plugins["NodeResourcesFit"] })
	if a, _, _ := q.Len(); a != 1 {
		t.Fatal("a related event did not move the pod (its backoff is over)")
	}
	// Without events, a pod goes back after five minutes.
	qp, _ = q.Pop()
	q.AddUnschedulable(qp, false)
	clk.Step(5*time.Minute + time.Second)
	q.Flush()
	if a, _, _ := q.Len(); a != 1 {
		t.Fatal("pod still unschedulable after five minutes")
	}
}

func TestMoveDuringTheCycleBacksOff(t *testing.T) {
	q, clk := newQueue()
	q.Add(st.Pod("p").Obj())
	qp, _ := q.Pop()
	q.MoveAll(nil) // e.g. a node was added while the pod was being scheduled
	q.AddUnschedulable(qp, false)
	if _, b, u := q.Len(); b != 1 || u != 0 {
		t.Fatalf("backoff %d unschedulable %d, want the pod backing off", b, u)
	}
	clk.Step(time.Second)
	q.Flush()
	if popName(t, q) != "p" {
		t.Fatal("wrong pod")
	}
}

func TestUpdates(t *testing.T) {
	q, _ := newQueue()
	pod := st.Pod("p").Obj()
	q.Add(pod)
	qp, _ := q.Pop()
	q.AddUnschedulable(qp, false)

	status := pod.DeepCopy()
	status.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	status.ResourceVersion = "2"
	q.Update(status)
	if _, _, u := q.Len(); u != 1 {
		t.Fatal("a status update moved an unschedulable pod")
	}
	tolerating := status.DeepCopy()
	tolerating.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	q.Update(tolerating)
	if _, b, u := q.Len(); b != 1 || u != 0 {
		t.Fatal("a spec update did not move the pod")
	}
	q.Delete(pod.UID)
	if a, b, u := q.Len(); a+b+u != 0 {
		t.Fatal("deleted pod still queued")
	}
	q.AddUnschedulable(qp, true)
	if a, b, u := q.Len(); a+b+u != 0 {
		t.Fatal("a deleted pod came back")
	}
}

func TestErrorsBackOffAtOnce(t *testing.T) {
	q, clk := newQueue()
	q.Add(st.Pod("p").Obj())
	qp, _ := q.Pop()
	q.AddUnschedulable(qp, true)
	if _, b, _ := q.Len(); b != 1 {
		t.Fatal("error did not back off")
	}
	clk.Step(time.Second)
	q.Flush()
	if popName(t, q) != "p" {
		t.Fatal("wrong pod")
	}
}

func TestCloseWakesPop(t *testing.T) {
	q, _ := newQueue()
	done := make(chan bool)
	go func() { _, ok := q.Pop(); done <- ok }()
	q.Close()
	if <-done {
		t.Error("Pop returned a pod from a closed queue")
	}
}
