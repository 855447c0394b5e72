package framework_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "orch/internal/scheduler/framework"
	"orch/internal/scheduler/plugins"
	st "orch/internal/scheduler/schedtest"
)

const controlPlane = "node-role.kubernetes.io/control-plane"

func newFramework() *fw.Framework {
	f := plugins.NewDefault()
	f.Rand = rand.New(rand.NewPCG(1, 2))
	f.Now = func() time.Time { return time.Unix(1000, 0) }
	return f
}

// fitMessage schedules pod and, when nothing fits, runs preemption as the
// scheduler does and returns the FitError's message.
func fitMessage(t *testing.T, f *fw.Framework, pod *v1.Pod, snap *fw.Snapshot) (string, *fw.Candidate) {
	t.Helper()
	_, err := f.Schedule(pod, snap)
	var fe *fw.FitError
	if !errors.As(err, &fe) {
		t.Fatalf("Schedule: %v, want a FitError", err)
	}
	cand, msg, _ := f.Preempt(pod, snap, fe.Diagnosis)
	fe.Diagnosis.PostFilterMsg = msg
	return fe.Error(), cand
}

func TestFitErrorMessage(t *testing.T) {
	tainted := func(name string) *v1.Node {
		return st.Node(name).Taint(controlPlane, "", v1.TaintEffectNoSchedule).Obj()
	}
	tests := []struct {
		name     string
		nodes    []*v1.Node
		existing []*v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"the issue's example", []*v1.Node{st.Node("w").CPU("2").Obj(), tainted("cp1"), tainted("cp2")}, nil,
			st.Pod("p").Req("cpu", "3").Obj(),
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. " +
				"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"no victims", []*v1.Node{st.Node("w").CPU("2").Obj(), tainted("cp1")}, []*v1.Pod{st.Pod("x").Node("w").Req("cpu", "1").Obj()},
			st.Pod("p").Req("cpu", "2").Obj(),
			"0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. " +
				"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."},
		{"several reasons on one node", []*v1.Node{st.Node("w").CPU("1").Memory("1Gi").Obj()}, []*v1.Pod{st.Pod("x").Node("w").Req("cpu", "1", "memory", "1Gi").Priority(5).Obj()},
			st.Pod("p").Req("cpu", "1", "memory", "1Gi").Obj(),
			"0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		{"a DaemonSet pod's node is full", []*v1.Node{st.Node("a").Obj(), st.Node("b").CPU("1").Obj(), st.Node("c").Obj()},
			[]*v1.Pod{st.Pod("x").Node("b").Req("cpu", "1").Obj()},
			st.Pod("ds").Req("cpu", "1").Affinity(onNode("b")).Obj(),
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
				"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."},
		{"never preempts", []*v1.Node{st.Node("w").CPU("1").Obj()}, []*v1.Pod{st.Pod("x").Node("w").Req("cpu", "1").Obj()},
			func() *v1.Pod {
				p := st.Pod("p").Req("cpu", "1").Priority(10).Obj()
				never := v1.PreemptNever
				p.Spec.PreemptionPolicy = &never
				return p
			}(),
			"0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := fitMessage(t, newFramework(), tc.pod, fw.NewSnapshot(tc.nodes, tc.existing))
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestScheduleSpreadsOverEqualNodes(t *testing.T) {
	snap := fw.NewSnapshot([]*v1.Node{st.Node("a").Obj(), st.Node("b").Obj(), st.Node("c").Obj()}, nil)
	f := newFramework()
	counts := map[string]int{}
	for i := range 9 {
		pod := st.Pod(fmt.Sprintf("p%d", i)).Req("cpu", "100m", "memory", "100Mi").Obj()
		res, err := f.Schedule(pod, snap)
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeName = res.Node
		snap.AddPod(pod)
		counts[res.Node]++
	}
	if counts["a"] != 3 || counts["b"] != 3 || counts["c"] != 3 {
		t.Errorf("placements %v, want 3 on each node", counts)
	}
}

func TestPreemptionPicksTheCheapestVictims(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1").CPU("4").Obj(), st.Node("n2").CPU("4").Obj(), st.Node("n3").CPU("4").Obj()}
	existing := []*v1.Pod{
		st.Pod("low").Node("n1").Req("cpu", "2").Priority(1).Obj(),
		st.Pod("mid").Node("n1").Req("cpu", "2").Priority(2).Obj(),
		st.Pod("big").Node("n2").Req("cpu", "4").Priority(5).Obj(),
		st.Pod("a").Node("n3").Req("cpu", "2").Priority(1).Obj(),
		st.Pod("b").Node("n3").Req("cpu", "2").Priority(1).Obj(),
		st.Pod("c").Node("n3").Req("cpu", "0").Priority(1).Obj(),
	}
	snap := fw.NewSnapshot(nodes, existing)
	pod := st.Pod("p").Req("cpu", "3").Priority(10).Obj()
	msg, cand := fitMessage(t, newFramework(), pod, snap)
	if cand == nil {
		t.Fatalf("no candidate: %s", msg)
	}
	// n1 must lose both its pods (highest priority 2), n2 its priority-5
	// pod, n3 only a and b (priority 1; c needs no cpu and is reprieved):
	// n3 has the lowest highest victim priority.
	var names []string
	for _, v := range cand.Victims {
		names = append(names, v.Name)
	}
	if cand.Node != "n3" || fmt.Sprint(names) != "[a b]" {
		t.Errorf("candidate %s with victims %v, want n3 with [a b]", cand.Node, names)
	}
}

func TestNominatedPodsKeepTheirRoom(t *testing.T) {
	snap := fw.NewSnapshot([]*v1.Node{st.Node("n").CPU("4").Obj()}, nil)
	snap.Nominate(st.Pod("nominee").Req("cpu", "3").Priority(10).Obj(), "n")
	f := newFramework()
	if _, err := f.Schedule(st.Pod("lower").Req("cpu", "2").Priority(5).Obj(), snap); err == nil {
		t.Error("a lower-priority pod took the room of a nominated pod")
	}
	if res, err := f.Schedule(st.Pod("higher").Req("cpu", "2").Priority(20).Obj(), snap); err != nil || res.Node != "n" {
		t.Errorf("higher-priority pod: %v, %v; want node n", res, err)
	}
	// A pod nominated to n goes there first.
	nominee := st.Pod("nominee").Req("cpu", "3").Priority(10).Obj()
	nominee.Status.NominatedNodeName = "n"
	if res, err := f.Schedule(nominee, snap); err != nil || res.Node != "n" || res.Evaluated != 1 {
		t.Errorf("nominee: %+v, %v; want node n after evaluating it alone", res, err)
	}
}

func TestPreemptionWaitsForTerminatingVictims(t *testing.T) {
	victim := st.Pod("v").Node("n").Req("cpu", "4").Obj()
	victim.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	victim.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	snap := fw.NewSnapshot([]*v1.Node{st.Node("n").CPU("4").Obj()}, []*v1.Pod{victim})
	pod := st.Pod("p").Req("cpu", "4").Priority(10).Obj()
	pod.Status.NominatedNodeName = "n"
	msg, cand := fitMessage(t, newFramework(), pod, snap)
	if want := "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to a terminating pod on the nominated node."; cand != nil || msg != want {
		t.Errorf("got %v %q, want %q", cand, msg, want)
	}
}

func TestNoNodes(t *testing.T) {
	if _, err := newFramework().Schedule(st.Pod("p").Obj(), fw.NewSnapshot(nil, nil)); !errors.Is(err, fw.ErrNoNodesAvailable) {
		t.Errorf("err = %v", err)
	}
}

// onNode is the node affinity the DaemonSet controller gives its pods.
func onNode(name string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}}}
}

func TestDaemonSetPodGoesToItsNode(t *testing.T) {
	snap := fw.NewSnapshot([]*v1.Node{st.Node("a").Obj(), st.Node("b").Obj(), st.Node("c").Obj()}, nil)
	res, err := newFramework().Schedule(st.Pod("ds").Affinity(onNode("c")).Obj(), snap)
	if err != nil || res.Node != "c" || res.Evaluated != 1 {
		t.Errorf("got %+v, %v; want node c, evaluated alone", res, err)
	}
}
