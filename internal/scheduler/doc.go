// Package scheduler is orch's kube-scheduler: it places every pending pod
// whose spec.schedulerName is "default-scheduler" on a node, as upstream's
// 1.37 default profile would, and users see the same outcome through the
// API: spec.nodeName set by pods/binding, a Normal "Scheduled" event, and
// for pods that fit nowhere a PodScheduled=False condition (reason
// Unschedulable) and a Warning "FailedScheduling" event that read
//
//	0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
//	taint {node-role.kubernetes.io/control-plane: }. preemption: 0/3 nodes
//	are available: 3 Preemption is not helpful for scheduling.
//
// The layers, from the pure core out:
//
//   - framework: a Snapshot of nodes with their pods (and namespace labels,
//     nominated pods, listers for spreading and volumes), the plugin
//     interfaces, Framework.Schedule (filter, score, select, as upstream's
//     schedule_one) and Framework.Preempt (DefaultPreemption's choice of
//     node and victims). No API, no goroutines, an injected clock.
//   - plugins: NodeName, NodeUnschedulable, TaintToleration, NodeAffinity,
//     NodePorts, NodeResourcesFit (LeastAllocated), BalancedAllocation,
//     ImageLocality, PodTopologySpread, InterPodAffinity, VolumeBinding,
//     wired with upstream's weights by plugins.NewDefault.
//   - queue: the priority queue with upstream's backoff (1 s doubling to
//     10 s) and the unschedulable set that cluster events empty.
//   - this package: informers keep the snapshot current (pods assumed on a
//     node count at once, before their binding is seen), one loop pops and
//     decides, and goroutines bind, report failures, and evict victims.
//
// The core decides without a cluster, which is how tests and benchmarks
// drive it:
//
//	snap := framework.NewSnapshot(nodes, boundPods)
//	f := plugins.NewDefault()
//	res, err := f.Schedule(pod, snap)
//	var fe *framework.FitError
//	if errors.As(err, &fe) {
//		cand, msg, _ := f.Preempt(pod, snap, fe.Diagnosis)
//		fe.Diagnosis.PostFilterMsg = msg
//		fmt.Println(fe, cand) // the message users read, and whom to evict
//	} else {
//		fmt.Println(res.Node)
//	}
//
// In a server the scheduler is built on the process's shared informers
// before they start, and runs until its context ends:
//
//	s := scheduler.New(scheduler.Config{Client: client, Informers: factory,
//		Recorder: recorder, Log: log, Clock: clock.RealClock{}}) // registers its informers
//	factory.StartWithContext(ctx)
//	err := s.Start(ctx) // blocks
package scheduler
