package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/envtest"
	"orch/internal/kubelet/cri"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeSystem is a machine whose facts the test changes.
type fakeSystem struct {
	mu  sync.Mutex
	sys System
}

func (f *fakeSystem) read(string) (System, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sys, nil
}

func (f *fakeSystem) set(change func(*System)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.sys)
}

// fakeMeasure is the pressure signals, as the test sets them; it counts
// the measurements.
type fakeMeasure struct {
	mu    sync.Mutex
	obs   Observations
	calls int
}

func (f *fakeMeasure) measure(context.Context) (Observations, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.obs, nil
}

func (f *fakeMeasure) set(obs Observations) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = obs
}

func (f *fakeMeasure) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newTestAgent returns an agent on a fake runtime whose network is ready,
// on a machine under no pressure (nothing measured).
func newTestAgent(cfg Config, client kubernetes.Interface, clk *clocktesting.FakeClock) (*Agent, *fakeSystem) {
	rt := cri.NewFake()
	if err := rt.UpdateRuntimeConfig(context.Background(), "10.42.0.0/24"); err != nil {
		panic(err)
	}
	a := New(cfg, client, rt, clk, quiet)
	fs := &fakeSystem{sys: testSystem()}
	a.readSystem = fs.read
	a.measure = (&fakeMeasure{}).measure
	return a, fs
}

// step waits until the agent's loop waits on the clock (its round is
// done), then moves the clock on by d.
func step(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	envtest.EventuallyTrue(t, "the agent waiting on its clock", clk.HasWaiters)
	clk.Step(d)
}

func getNode(t *testing.T, client kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// TestAgentAgainstAPIServer runs the agent against the real apiserver with
// a fake runtime and a fake clock: it registers the Node, renews the Lease
// every 10 s, posts the status after a minute or at once when it differs.
func TestAgentAgainstAPIServer(t *testing.T) {
	env := envtest.New(t, "kube-node-lease")
	client := env.Client
	ctx := context.Background()
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	cfg := Config{Name: "agent-1", NodeIPs: []net.IP{net.ParseIP("192.0.2.10")}, Labels: map[string]string{"disk": "ssd"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "edge", Effect: corev1.TaintEffectNoSchedule}}}
	a, fs := newTestAgent(cfg, client, clk)
	env.Start(t, a)

	var lease *coordinationv1.Lease
	leaseRenewedAt := func(at time.Time) func() (bool, error) {
		return func() (bool, error) {
			l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, "agent-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			lease = l
			return l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(at), nil
		}
	}
	envtest.Eventually(t, "the lease", leaseRenewedAt(start))

	n := getNode(t, client, "agent-1")
	if n.Labels["disk"] != "ssd" || n.Labels["kubernetes.io/hostname"] != "agent-1" || n.Labels["kubernetes.io/os"] != "linux" {
		t.Errorf("labels = %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	if got := n.Status.NodeInfo.ContainerRuntimeVersion; got != "fake://0.0.0" {
		t.Errorf("containerRuntimeVersion = %q, want fake://0.0.0 (from CRI Version)", got)
	}
	if pods := n.Status.Capacity[corev1.ResourcePods]; pods.Value() != 110 {
		t.Errorf("pods capacity = %s", pods.String())
	}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0].Address != "192.0.2.10" {
		t.Errorf("addresses = %v", n.Status.Addresses)
	}
	ready := condition(n, corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" || ready.Message != "kubelet is posting ready status" {
		t.Errorf("Ready = %+v, want True/KubeletReady", ready)
	}
	if !ready.LastHeartbeatTime.Time.Equal(start) {
		t.Errorf("first heartbeat = %v, want %v", ready.LastHeartbeatTime, start)
	}
	if *lease.Spec.HolderIdentity != "agent-1" || *lease.Spec.LeaseDurationSeconds != 40 ||
		len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" || lease.OwnerReferences[0].UID != n.UID {
		t.Errorf("lease = %+v, want held by agent-1 for 40 s and owned by the Node (uid %s)", lease, n.UID)
	}

	// Two renewals, 10 s apart; the status is not due yet.
	for i := 1; i <= 2; i++ {
		step(t, clk, 10*time.Second)
		envtest.Eventually(t, "a renewal of the lease", leaseRenewedAt(start.Add(time.Duration(i)*10*time.Second)))
	}
	if hb := condition(getNode(t, client, "agent-1"), corev1.NodeReady).LastHeartbeatTime; !hb.Time.Equal(start) {
		t.Errorf("status posted at %v although nothing changed and a minute has not passed", hb)
	}

	// A minute after the last post, the status is posted again.
	for at := 30 * time.Second; at <= time.Minute; at += 10 * time.Second {
		step(t, clk, 10*time.Second)
	}
	envtest.Eventually(t, "the status posted after a minute", func() (bool, error) {
		hb := condition(getNode(t, client, "agent-1"), corev1.NodeReady).LastHeartbeatTime
		return hb.Time.Equal(start.Add(time.Minute)), nil
	})

	// Something changes (the node lifecycle controller marks the node
	// Unknown; the runtime is upgraded): posted at the next round. An
	// extended resource an operator advertised meanwhile is kept.
	step(t, clk, 0) // wait until the round is over, then change the Node
	n = getNode(t, client, "agent-1")
	n.Status.Capacity["example.com/dongle"] = resource.MustParse("3")
	n.Status.Allocatable["example.com/dongle"] = resource.MustParse("3")
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		}
	}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fs.set(func(s *System) { s.KernelVersion = "6.2.0" })
	step(t, clk, 10*time.Second)
	envtest.Eventually(t, "the changed status posted at once", func() (bool, error) {
		n := getNode(t, client, "agent-1")
		r := condition(n, corev1.NodeReady)
		return r.Status == corev1.ConditionTrue && n.Status.NodeInfo.KernelVersion == "6.2.0" &&
			r.LastHeartbeatTime.Time.Equal(start.Add(70*time.Second)), nil
	})
	n = getNode(t, client, "agent-1")
	if c, a := n.Status.Capacity["example.com/dongle"], n.Status.Allocatable["example.com/dongle"]; c.Value() != 3 || a.Value() != 3 {
		t.Errorf("the advertised extended resource: capacity %s, allocatable %s; want 3 and 3", c.String(), a.String())
	}
	if pods := n.Status.Allocatable[corev1.ResourcePods]; pods.Value() != 110 {
		t.Errorf("pods allocatable = %s", pods.String())
	}
}

// TestAgentUpdatesRegisteredNode: a Node that exists (an agent restart)
// gets its labels and status updated; its taints are left alone.
func TestAgentUpdatesRegisteredNode(t *testing.T) {
	env := envtest.New(t, "kube-node-lease")
	client := env.Client
	ctx := context.Background()
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "agent-2", Labels: map[string]string{"disk": "hdd", "by-admin": "yes"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "admin", Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cfg := Config{Name: "agent-2", NodeIPs: []net.IP{net.ParseIP("192.0.2.11")}, Labels: map[string]string{"disk": "ssd"},
		Taints: []corev1.Taint{{Key: "new", Effect: corev1.TaintEffectNoExecute}}}
	a, _ := newTestAgent(cfg, client, clk)
	env.Start(t, a)
	envtest.Eventually(t, "the node's status", func() (bool, error) {
		n := getNode(t, client, "agent-2")
		return n.Status.NodeInfo.ContainerRuntimeVersion != "", nil
	})
	n := getNode(t, client, "agent-2")
	if n.Labels["disk"] != "ssd" || n.Labels["by-admin"] != "yes" || n.Labels["kubernetes.io/arch"] != "arm64" {
		t.Errorf("labels = %v, want disk=ssd, by-admin kept, the well-known ones added", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "admin" {
		t.Errorf("taints = %v, want the admin's only (--node-taint applies at registration)", n.Spec.Taints)
	}
}

// TestAgentRetriesWhileServerFails: with the server failing, the loop does
// not end; it retries with growing waits (at most MaxBackoff) and registers
// once the server answers.
func TestAgentRetriesWhileServerFails(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	failures := 4
	client.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			if action.GetVerb() == "create" && action.GetResource().Resource == "nodes" {
				failures--
			}
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Now())
	a, _ := newTestAgent(Config{Name: "agent-3", NodeIPs: []net.IP{net.ParseIP("192.0.2.12")}}, client, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start = %v after its context ended, want nil", err)
		}
	}()

	// Waits of 0.5, 1, 2, 4 s: stepping by less than the current wait does not start a round.
	for _, wait := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		envtest.EventuallyTrue(t, "the agent waiting", clk.HasWaiters)
		select {
		case err := <-done:
			t.Fatalf("Start returned %v while the server failed", err)
		default:
		}
		clk.Step(wait - time.Millisecond)
		if !clk.HasWaiters() {
			t.Fatalf("retried before the backoff of %v", wait)
		}
		clk.Step(time.Millisecond)
	}
	envtest.Eventually(t, "registration once the server answers", func() (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, "agent-3", metav1.GetOptions{})
		return err == nil, nil
	})
	envtest.Eventually(t, "the lease", func() (bool, error) {
		_, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, "agent-3", metav1.GetOptions{})
		return err == nil, nil
	})
}

// TestAgentReadyFollowsTheRuntime: a runtime whose network is not ready
// (no pod CIDR, so no CNI config) keeps the Node NotReady with upstream's
// message, and the agent checks every second; once the network is ready
// the Node turns Ready at the next second and the daemon endpoint is the
// kubelet port.
func TestAgentReadyFollowsTheRuntime(t *testing.T) {
	env := envtest.New(t, "kube-node-lease")
	client := env.Client
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	rt := cri.NewFake()
	a := New(Config{Name: "agent-3", NodeIPs: []net.IP{net.ParseIP("192.0.2.12")}, KubeletPort: 10250}, client, rt, clk, quiet)
	a.readSystem = (&fakeSystem{sys: testSystem()}).read
	a.measure = (&fakeMeasure{}).measure
	env.Start(t, a)

	ready := func() corev1.NodeCondition {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "agent-3", metav1.GetOptions{})
		if err != nil {
			return corev1.NodeCondition{}
		}
		return condition(n, corev1.NodeReady)
	}
	envtest.EventuallyTrue(t, "the node registered NotReady", func() bool { return ready().Status == corev1.ConditionFalse })
	want := "container runtime network not ready: NetworkReady=false reason: message:"
	if r := ready(); r.Reason != "KubeletNotReady" || r.Message != want {
		t.Errorf("Ready = %s/%q, want KubeletNotReady/%q", r.Reason, r.Message, want)
	}
	if port := getNode(t, client, "agent-3").Status.DaemonEndpoints.KubeletEndpoint.Port; port != 10250 {
		t.Errorf("kubelet endpoint port = %d, want 10250", port)
	}
	if err := rt.UpdateRuntimeConfig(context.Background(), "10.42.3.0/24"); err != nil {
		t.Fatal(err)
	}
	step(t, clk, time.Second)
	envtest.EventuallyTrue(t, "the node Ready a second later", func() bool { return ready().Status == corev1.ConditionTrue })
}

// TestAgentReportsPressure: memory.available below the threshold makes
// MemoryPressure True with upstream's reason, posted at once; it stays
// True for the transition period after the memory is back, then turns
// False with a new lastTransitionTime. The signals are measured every
// MeasureInterval, not every round.
func TestAgentReportsPressure(t *testing.T) {
	env := envtest.New(t, "kube-node-lease")
	client := env.Client
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	th, err := ParseEvictionHard([]string{"memory.available<500Mi"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "agent-4", NodeIPs: []net.IP{net.ParseIP("192.0.2.13")}, EvictionHard: th,
		LeaseInterval: 5 * time.Second, PressureTransitionPeriod: time.Minute}
	a, _ := newTestAgent(cfg, client, clk)
	m := &fakeMeasure{obs: Observations{
		SignalMemoryAvailable: {Available: 400 << 20, Capacity: 4 << 30},
		SignalNodeFsAvailable: {Available: 1, Capacity: 100}, // no nodefs threshold: no disk pressure
	}}
	a.measure = m.measure
	env.Start(t, a)

	memoryPressure := func() corev1.NodeCondition {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "agent-4", metav1.GetOptions{})
		if err != nil {
			return corev1.NodeCondition{}
		}
		return condition(n, corev1.NodeMemoryPressure)
	}
	envtest.EventuallyTrue(t, "MemoryPressure True", func() bool { return memoryPressure().Status == corev1.ConditionTrue })
	c := memoryPressure()
	if c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" || !c.LastTransitionTime.Time.Equal(start) {
		t.Errorf("MemoryPressure = %+v, want KubeletHasInsufficientMemory since %v", c, start)
	}
	if d := condition(getNode(t, client, "agent-4"), corev1.NodeDiskPressure); d.Status != corev1.ConditionFalse {
		t.Errorf("DiskPressure = %s, want False (no disk threshold given)", d.Status)
	}

	// The memory is back at +5 s; rounds every 5 s, measurements every 10 s.
	m.set(Observations{SignalMemoryAvailable: {Available: 3 << 30, Capacity: 4 << 30}})
	for at := 5 * time.Second; at < time.Minute; at += 5 * time.Second {
		step(t, clk, 5*time.Second)
	}
	step(t, clk, 0) // the round at +55 s is over
	if c := memoryPressure(); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(start) {
		t.Errorf("within the transition period: MemoryPressure = %s since %v, want True since %v", c.Status, c.LastTransitionTime, start)
	}
	if n := m.count(); n != 6 {
		t.Errorf("measured %d times in 12 rounds over 55 s, want 6 (every 10 s)", n)
	}
	step(t, clk, 5*time.Second) // +60 s: a minute after the threshold was last met
	envtest.EventuallyTrue(t, "MemoryPressure False", func() bool { return memoryPressure().Status == corev1.ConditionFalse })
	c = memoryPressure()
	if c.Reason != "KubeletHasSufficientMemory" || c.Message != "kubelet has sufficient memory available" || !c.LastTransitionTime.Time.Equal(start.Add(time.Minute)) {
		t.Errorf("MemoryPressure = %+v, want KubeletHasSufficientMemory since %v", c, start.Add(time.Minute))
	}
}

// TestAgentReportsImages: status.images lists the runtime's images,
// largest first; a pulled image is posted at once; while the runtime
// cannot list its images the last list stays.
func TestAgentReportsImages(t *testing.T) {
	env := envtest.New(t, "kube-node-lease")
	client := env.Client
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	a, fs := newTestAgent(Config{Name: "agent-5", NodeIPs: []net.IP{net.ParseIP("192.0.2.14")}}, client, clk)
	rt := a.rt.(*cri.Fake)
	rt.SetImage("orch.local/pause:3.10", 300<<10, true)
	env.Start(t, a)

	images := func() []corev1.ContainerImage {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "agent-5", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return n.Status.Images
	}
	envtest.EventuallyTrue(t, "the pause image in status.images", func() bool { return len(images()) == 1 })
	if got := images()[0]; len(got.Names) != 1 || got.Names[0] != "orch.local/pause:3.10" || got.SizeBytes != 300<<10 {
		t.Errorf("status.images[0] = %+v, want the pause image and its size", got)
	}

	step(t, clk, 0) // the first round is over
	rt.SetImage("busybox:1.35", 2<<20, false)
	step(t, clk, 10*time.Second)
	envtest.EventuallyTrue(t, "the imported image posted at once", func() bool { return len(images()) == 2 })
	if got := images(); got[0].Names[0] != "busybox:1.35" || got[1].Names[0] != "orch.local/pause:3.10" {
		t.Errorf("status.images = %+v, want busybox (the larger) first", got)
	}

	step(t, clk, 0)
	rt.FailNext("ListImages", errors.New("runtime busy"))
	fs.set(func(s *System) { s.KernelVersion = "6.2.0" })
	step(t, clk, 10*time.Second)
	envtest.EventuallyTrue(t, "the changed kernel posted", func() bool {
		return getNode(t, client, "agent-5").Status.NodeInfo.KernelVersion == "6.2.0"
	})
	if got := images(); len(got) != 2 {
		t.Errorf("status.images = %+v after a failed ListImages, want the last list (2 images)", got)
	}
}
