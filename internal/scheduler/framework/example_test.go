package framework_test

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
	"orch/internal/scheduler/plugins"
	st "orch/internal/scheduler/schedtest"
)

// Schedule a pod over a hand-built snapshot, then one that fits nowhere.
func Example() {
	nodes := []*v1.Node{
		st.Node("small").CPU("2").Obj(),
		st.Node("cp").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
	}
	busy := st.Pod("busy").Node("small").Req("cpu", "1").Obj()
	snap := fw.NewSnapshot(nodes, []*v1.Pod{busy})
	f := plugins.NewDefault()

	res, _ := f.Schedule(st.Pod("web").Req("cpu", "500m").Obj(), snap)
	fmt.Println("web goes to", res.Node)

	big := st.Pod("big").Req("cpu", "2").Obj()
	_, err := f.Schedule(big, snap)
	var fe *fw.FitError
	if errors.As(err, &fe) {
		_, fe.Diagnosis.PostFilterMsg, _ = f.Preempt(big, snap, fe.Diagnosis)
		fmt.Println(fe)
	}
	// Output:
	// web goes to small
	// 0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.
}
