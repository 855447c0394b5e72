package daemonset

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/controller"
	"orch/internal/envtest"
	"orch/internal/simnode"
)

// minReady is the DaemonSets' minReadySeconds in the rollout tests: new
// pods become ready at once (simulated kubelets) but available only when
// the test moves the controller's fake clock past it, so each step of a
// rollout waits for the test.
const minReady = 300

// rollout drives a DaemonSet through a rolling update on a fake clock.
type rollout struct {
	*cluster
	clk  *testingclock.FakeClock
	app  string
	hash string // the revision being rolled out
}

func startRollout(t *testing.T, app string, nodes int, strategy appsv1.RollingUpdateDaemonSet) *rollout {
	clk := testingclock.NewFakeClock(time.Now())
	var ns []simnode.Node
	var names []string
	for i := 1; i <= nodes; i++ {
		ns = append(ns, simnode.Node{Name: fmt.Sprintf("n%d", i)})
		names = append(names, fmt.Sprintf("n%d", i))
	}
	r := &rollout{cluster: startCluster(t, clk, ns...), clk: clk, app: app}
	r.createDS(newDS(app, func(ds *appsv1.DaemonSet) {
		ds.Spec.MinReadySeconds = minReady
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &strategy}
	}))
	n := int32(nodes)
	envtest.EventuallyTrue(t, "ready pods, not yet available", func() bool {
		return r.runsOn(app, names...) && statusIs(r.ds(app), n, n, 0, n, n, 0)
	})
	r.step()
	envtest.EventuallyTrue(t, "available pods", func() bool { return statusIs(r.ds(app), n, n, 0, n, n, n) })
	return r
}

// lastReady is the latest time one of the live pods became ready.
func (r *rollout) lastReady() time.Time {
	var last time.Time
	for _, p := range r.pods(r.app) {
		if c := controller.ReadyCondition(&p); c != nil && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(last) {
			last = c.LastTransitionTime.Time
		}
	}
	return last
}

// update changes the image and returns once the controller has made the
// new revision.
func (r *rollout) update(image string) {
	r.updateDS(r.app, func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = image })
	envtest.EventuallyTrue(r.t, "a new revision", func() bool {
		revs := r.revisions(r.ds(r.app))
		if len(revs) == 0 {
			return false
		}
		last := revs[len(revs)-1]
		r.hash = last.Labels[hashLabel]
		return len(revs) == 2 && last.Revision == 2
	})
}

// state counts, over the live pods: per node how many, and how many pods
// are of the new revision, new but not available (of which not ready),
// old.
type state struct {
	perNode                            map[string]int
	updated, surging, starting, oldies int
}

func (r *rollout) state() state {
	s := state{perNode: map[string]int{}}
	for _, p := range r.pods(r.app) {
		node, _ := targetNode(&p)
		s.perNode[node]++
		switch {
		case p.Labels[hashLabel] != r.hash:
			s.oldies++
		case !isAvailable(&p, minReady, r.clk.Now()):
			s.updated++
			s.surging++
			if !controller.PodReady(&p) {
				s.starting++
			}
		default:
			s.updated++
		}
	}
	return s
}

// step moves the fake clock just past minReadySeconds of the pods ready
// now, so that they become available and pods that become ready later do
// not. Pod times have a resolution of a second: it first lets two seconds
// pass, so that later pods are told apart from these.
func (r *rollout) step() {
	last := r.lastReady()
	time.Sleep(time.Until(last.Add(2 * time.Second)))
	r.clk.SetTime(last.Add(minReady*time.Second + 500*time.Millisecond))
}

// maxUnavailable 50% of 4 nodes: two old pods are replaced at a time, the
// next two only once the first two new ones are available.
func TestRollingUpdateMaxUnavailable(t *testing.T) {
	half := intstr.FromString("50%")
	r := startRollout(t, "web", 4, appsv1.RollingUpdateDaemonSet{MaxUnavailable: &half})
	r.update("busybox:2")
	envtest.EventuallyTrue(t, "two pods replaced", func() bool {
		return statusIs(r.ds("web"), 4, 4, 0, 4, 2, 2) && r.state().updated == 2
	})
	// The controller wrote this status after deciding on these pods: the
	// two old ones must still be there.
	if s := r.state(); s.oldies != 2 || s.updated != 2 || len(s.perNode) != 4 {
		t.Fatalf("after the first wave: %+v", s)
	}
	r.step()
	envtest.EventuallyTrue(t, "the other two replaced", func() bool { return statusIs(r.ds("web"), 4, 4, 0, 4, 4, 2) })
	r.step()
	envtest.EventuallyTrue(t, "all available", func() bool { return statusIs(r.ds("web"), 4, 4, 0, 4, 4, 4) })
	ds := r.ds("web")
	for _, p := range r.pods("web") {
		checkDaemonPod(t, &p, ds, r.hash, "2")
		if p.Spec.Containers[0].Image != "busybox:2" {
			t.Fatalf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
		}
	}
}

// maxSurge 1 of 3 nodes: a new pod starts beside an old one, the old one
// goes once the new one is available; every node keeps a pod throughout,
// and at most one new pod at a time is not yet available.
func TestRollingUpdateMaxSurge(t *testing.T) {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	r := startRollout(t, "proxy", 3, appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero})
	r.update("busybox:2")
	check := func(s state) {
		t.Helper()
		if len(s.perNode) != 3 || s.surging > 1 {
			t.Fatalf("surge broke its limits: %+v", s)
		}
		for node, n := range s.perNode {
			if n > 2 {
				t.Fatalf("%d pods on %s: %+v", n, node, s)
			}
		}
	}
	for wave := 1; wave <= 3; wave++ {
		envtest.EventuallyTrue(t, fmt.Sprintf("new pod %d ready beside the old ones", wave), func() bool {
			s := r.state()
			check(s)
			return s.updated == wave && s.surging == 1 && s.starting == 0 && s.oldies == 3-wave+1
		})
		r.step()
	}
	envtest.EventuallyTrue(t, "all replaced and available", func() bool {
		s := r.state()
		check(s)
		return s.oldies == 0 && s.updated == 3 && statusIs(r.ds("proxy"), 3, 3, 0, 3, 3, 3)
	})
}
