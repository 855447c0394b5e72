package framework_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

// BenchmarkSchedule10kPodsOn1kNodes schedules 10,000 pods (100m cpu,
// 128Mi each) one after the other on 1,000 nodes in 3 zones, with the
// default plugins and no API: the pure decision speed. "bare" pods have
// no owner; "replicaset" pods are selected by a ReplicaSet, so the system
// default topology spreading (hostname and zone) scores them too, as it
// does a Deployment's pods. Each iteration starts from empty nodes.
func BenchmarkSchedule10kPodsOn1kNodes(b *testing.B) {
	const numNodes, numPods = 1000, 10000
	nodes := make([]*v1.Node, numNodes)
	for i := range nodes {
		nodes[i] = st.Node(fmt.Sprintf("node-%04d", i)).CPU("32").Memory("128Gi").Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)).Obj()
	}
	pods := make([]*v1.Pod, numPods)
	for i := range pods {
		pods[i] = st.Pod(fmt.Sprintf("pod-%05d", i)).Label("app", "web").Req("cpu", "100m", "memory", "128Mi").Obj()
	}
	owner := labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, owned := range []bool{false, true} {
		name := map[bool]string{false: "bare", true: "replicaset"}[owned]
		b.Run(name, func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				snap := fw.NewSnapshot(nodes, nil)
				if owned {
					snap.Selectors = func(*v1.Pod) labels.Selector { return owner }
				}
				f := newFramework()
				start := time.Now()
				for _, p := range pods {
					res, err := f.Schedule(p, snap)
					if err != nil {
						b.Fatal(err)
					}
					bound := *p
					bound.Spec.NodeName = res.Node
					snap.AddPod(&bound)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(numPods*b.N)/elapsed.Seconds(), "pods/s")
		})
	}
}
