package pods

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/kubelet/podconfig"
)

// The plan's tests need no runtime: a podState is built by hand, as
// Workers.state would read it.

var planNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
)

// ctr is one container the runtime has, in sandbox "sb" unless said.
type ctr struct {
	name    string
	state   runtimeapi.ContainerState
	exit    int32
	attempt uint32
	sandbox string
	// ago is how long before planNow it exited.
	ago time.Duration
	// hash is its io.kubernetes.container.hash; "" for the current
	// spec's, "-" for none.
	hash string
}

// stateOf is the podState of pod with sandbox sb (nil: none) and cs,
// oldest first.
func stateOf(pod *corev1.Pod, sb *runtimeapi.PodSandboxStatus, cs ...ctr) podState {
	st := podState{sandbox: sb, containers: map[string]*runtimeapi.ContainerStatus{},
		history: map[string][]*runtimeapi.ContainerStatus{}, active: map[string]*runtimeapi.ContainerStatus{},
		sandboxOf: map[string]string{}}
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		if c.sandbox == "" {
			c.sandbox = "sb"
		}
		id := c.name + strconv.Itoa(int(c.attempt))
		if c.sandbox != "sb" {
			id += "@" + c.sandbox
		}
		annotations := map[string]string{}
		if spec := specOf(pod, c.name); spec != nil {
			// Made with the spec's resources: no resize to do.
			r, _ := json.Marshal(podconfig.CPUMemory(spec.Resources))
			annotations[podconfig.AnnotationResources] = string(r)
		}
		if spec := specOf(pod, c.name); spec != nil && c.hash == "" {
			annotations[podconfig.AnnotationHash] = strconv.FormatUint(podconfig.ContainerHash(spec), 16)
		} else if c.hash != "-" {
			annotations[podconfig.AnnotationHash] = c.hash
		}
		s := &runtimeapi.ContainerStatus{Id: id, State: c.state, ExitCode: c.exit, Annotations: annotations,
			Metadata: &runtimeapi.ContainerMetadata{Name: c.name, Attempt: c.attempt}}
		if c.state == exited {
			s.FinishedAt = planNow.Add(-c.ago).UnixNano()
		}
		if st.containers[c.name] == nil {
			st.containers[c.name] = s
		}
		if st.active[c.name] == nil && sb != nil && c.sandbox == sb.Id {
			st.active[c.name] = s
		}
		st.sandboxOf[id] = c.sandbox
		st.history[c.name] = append(st.history[c.name], s)
	}
	return st
}

func sandbox(ready bool, attempt uint32) *runtimeapi.PodSandboxStatus {
	state := runtimeapi.PodSandboxState_SANDBOX_READY
	if !ready {
		state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	return &runtimeapi.PodSandboxStatus{Id: "sb", State: state, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt}}
}

// fakeProbes: containers in notStarted have not passed their startup
// probe, those in dead failed their liveness probe.
type fakeProbes struct{ notStarted, dead []string }

func (p fakeProbes) Started(id string) bool                  { return !slices.Contains(p.notStarted, id) }
func (p fakeProbes) LivenessFailed(id string) bool           { return slices.Contains(p.dead, id) }
func (p fakeProbes) StartupFailed(id string) bool            { return false }
func (p fakeProbes) LivenessGracePeriod(id string) *int64    { g := int64(7); return &g }
func (p fakeProbes) withDead(ids ...string) fakeProbes       { p.dead = ids; return p }
func (p fakeProbes) withNotStarted(ids ...string) fakeProbes { p.notStarted = ids; return p }

func withInit(p *corev1.Pod, sidecars ...string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{{Name: "init1", Image: "busybox"}, {Name: "init2", Image: "busybox"}}
	for _, name := range sidecars {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox", RestartPolicy: &always})
	}
	return p
}

func TestPlan(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	pod := func(policy corev1.RestartPolicy) *corev1.Pod { return testPod("p", policy) }
	deleting := pod(always)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &metav1.Time{Time: planNow}, new(int64)
	*deleting.DeletionGracePeriodSeconds = 5
	succeeded := pod(always)
	succeeded.Status.Phase = corev1.PodSucceeded
	ephemeral := pod(always)
	ephemeral.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "gone",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	ready := sandbox(true, 0)

	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		sandbox *runtimeapi.PodSandboxStatus
		cs      []ctr
		probes  fakeProbes
		// emptyOld are older sandboxes with no container left.
		emptyOld []string
		// raised are how long before planNow main's back-off was raised.
		raised []time.Duration
		want   []string
	}{
		{name: "no sandbox", pod: pod(always), want: []string{"createSandbox"}},
		{name: "new pod", pod: pod(always), sandbox: ready, want: []string{"prepareSandbox", "createContainer main"}},
		{name: "running", pod: pod(always), sandbox: ready, cs: []ctr{{name: "main", state: running}},
			want: []string{"prepareSandbox"}},
		{name: "created, start failed", pod: pod(always), sandbox: ready, cs: []ctr{{name: "main", state: created}},
			want: []string{"prepareSandbox", "startContainer main id=main0"}},

		// Restart policies: the first restart is at once.
		{name: "Always, exit 0", pod: pod(always), sandbox: ready, cs: []ctr{{name: "main", state: exited, ago: time.Second}},
			want: []string{"prepareSandbox", "createContainer main attempt=1 restart"}},
		{name: "Always, exit 1", pod: pod(always), sandbox: ready, cs: []ctr{{name: "main", state: exited, exit: 1, ago: time.Second}},
			want: []string{"prepareSandbox", "createContainer main attempt=1 restart"}},
		{name: "OnFailure, exit 1", pod: pod(onFailure), sandbox: ready, cs: []ctr{{name: "main", state: exited, exit: 1, ago: time.Second}},
			want: []string{"prepareSandbox", "createContainer main attempt=1 restart"}},
		{name: "OnFailure, exit 0", pod: pod(onFailure), sandbox: ready, cs: []ctr{{name: "main", state: exited, ago: time.Second}},
			want: []string{"prepareSandbox"}},
		{name: "Never, exit 1", pod: pod(never), sandbox: ready, cs: []ctr{{name: "main", state: exited, exit: 1, ago: time.Second}},
			want: []string{"prepareSandbox"}},

		// Crash-loop back-off: 10 s after the first restart, doubling.
		{name: "in back-off", pod: pod(always), sandbox: ready, raised: []time.Duration{time.Minute},
			cs:   []ctr{{name: "main", state: exited, exit: 1, ago: 3 * time.Second}},
			want: []string{"prepareSandbox", "waitBackOff main id=main0 delay=10s until=12:00:07"}},
		{name: "in doubled back-off", pod: pod(always), sandbox: ready, raised: []time.Duration{2 * time.Minute, time.Minute},
			cs:   []ctr{{name: "main", state: exited, exit: 1, attempt: 2, ago: 3 * time.Second}},
			want: []string{"prepareSandbox", "waitBackOff main id=main2 delay=20s until=12:00:17"}},
		{name: "back-off over", pod: pod(always), sandbox: ready, raised: []time.Duration{time.Minute},
			cs:   []ctr{{name: "main", state: exited, exit: 1, attempt: 1, ago: 10 * time.Second}},
			want: []string{"prepareSandbox", "createContainer main attempt=2 restart"}},
		{name: "back-off expired after a long run", pod: pod(always), sandbox: ready, raised: []time.Duration{12 * time.Minute},
			cs:   []ctr{{name: "main", state: exited, exit: 1, attempt: 1, ago: time.Second}},
			want: []string{"prepareSandbox", "createContainer main attempt=2 restart"}},
		{name: "restart removes the attempts before the last", pod: pod(always), sandbox: ready,
			cs:   []ctr{{name: "main", state: exited, attempt: 0, ago: time.Hour}, {name: "main", state: exited, attempt: 1, ago: time.Minute}},
			want: []string{"prepareSandbox", "createContainer main attempt=2 remove=[main0] restart"}},

		// Init containers one at a time, in order.
		{name: "first init container", pod: withInit(pod(always)), sandbox: ready,
			want: []string{"prepareSandbox", "createContainer init1"}},
		{name: "init container running", pod: withInit(pod(always)), sandbox: ready, cs: []ctr{{name: "init1", state: running}},
			want: []string{"prepareSandbox"}},
		{name: "second init container", pod: withInit(pod(always)), sandbox: ready, cs: []ctr{{name: "init1", state: exited}},
			want: []string{"prepareSandbox", "createContainer init2"}},
		{name: "failed init container, Always", pod: withInit(pod(always)), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited, exit: 1}},
			want: []string{"prepareSandbox", "createContainer init2 attempt=1 restart"}},
		{name: "failed init container, Never", pod: withInit(pod(never)), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited, exit: 1}},
			want: []string{"prepareSandbox"}},
		{name: "initialized", pod: withInit(pod(never)), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}},
			want: []string{"prepareSandbox", "createContainer main"}},
		{name: "completed init containers stay completed", pod: withInit(pod(always)), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "main", state: running}},
			want: []string{"prepareSandbox"}},

		// Sidecars keep running; the next container waits for one to start.
		{name: "sidecar starts after the init containers", pod: withInit(pod(always), "proxy", "log"), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}},
			want: []string{"prepareSandbox", "createContainer proxy"}},
		{name: "next waits for a sidecar's startup probe", pod: withInit(pod(always), "proxy", "log"), sandbox: ready,
			probes: fakeProbes{}.withNotStarted("proxy0"),
			cs:     []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "proxy", state: running}},
			want:   []string{"prepareSandbox"}},
		{name: "second sidecar once the first started", pod: withInit(pod(always), "proxy", "log"), sandbox: ready,
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "proxy", state: running}},
			want: []string{"prepareSandbox", "createContainer log"}},
		{name: "exited sidecar restarts under Never", pod: withInit(pod(never), "proxy"), sandbox: ready,
			cs: []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "proxy", state: exited, ago: time.Second},
				{name: "main", state: running}},
			want: []string{"prepareSandbox", "createContainer proxy attempt=1 restart"}},
		{name: "sidecars stop in reverse order once the containers are done", pod: withInit(pod(never), "proxy", "log"), sandbox: ready,
			cs: []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "proxy", state: running},
				{name: "log", state: running}, {name: "main", state: exited}},
			want: []string{"prepareSandbox", "stopSidecar log id=log0", "stopSidecar proxy id=proxy0"}},

		// A sandbox that died is replaced, its init containers run again.
		{name: "dead sandbox", pod: withInit(pod(always)), sandbox: sandbox(false, 2),
			cs:   []ctr{{name: "init1", state: exited}, {name: "init2", state: exited}, {name: "main", state: running}},
			want: []string{"killSandbox id=sb", "createSandbox attempt=3"}},
		{name: "dead sandbox, Never", pod: pod(never), sandbox: sandbox(false, 0), cs: []ctr{{name: "main", state: running}},
			want: []string{"killSandbox id=sb"}},
		{name: "dead sandbox, containers done", pod: pod(onFailure), sandbox: sandbox(false, 0), cs: []ctr{{name: "main", state: exited}},
			want: []string{"killSandbox id=sb"}},
		{name: "init container again in the new sandbox", pod: withInit(pod(always)), sandbox: ready,
			cs: []ctr{{name: "init1", state: exited, sandbox: "old"}, {name: "init2", state: exited, sandbox: "old"},
				{name: "main", state: exited, exit: 137, sandbox: "old", ago: time.Second}},
			want: []string{"prepareSandbox", "createContainer init1 attempt=1 restart"}},
		{name: "old sandboxes and containers go", pod: pod(always), sandbox: ready, emptyOld: []string{"older"},
			cs: []ctr{{name: "main", state: exited, sandbox: "old", ago: time.Hour}, {name: "main", attempt: 1, state: exited, ago: time.Minute},
				{name: "main", attempt: 2, state: running}},
			want: []string{"removeSandbox id=older", "removeContainer id=main0@old \"main\"", "prepareSandbox"}},

		// A running container is killed when its liveness probe failed,
		// and replaced when its spec changed.
		{name: "liveness failed", pod: pod(always), sandbox: ready, probes: fakeProbes{}.withDead("main0"),
			cs:   []ctr{{name: "main", state: running}},
			want: []string{"prepareSandbox", `killContainer main id=main0 grace=7 "failed liveness probe"`}},
		{name: "spec changed", pod: pod(never), sandbox: ready,
			cs: []ctr{{name: "main", state: exited, ago: time.Hour}, {name: "main", attempt: 1, state: running, hash: "123"}},
			want: []string{"prepareSandbox", `killContainer main id=main1 grace=30 "definition changed"`,
				"createContainer main attempt=2 remove=[main0]"}},
		{name: "no hash", pod: pod(always), sandbox: ready, cs: []ctr{{name: "main", state: running, hash: "-"}},
			want: []string{"prepareSandbox"}},

		{name: "being deleted", pod: deleting, sandbox: ready, cs: []ctr{{name: "main", state: running}},
			want: []string{"killPod grace=5"}},
		{name: "finished", pod: succeeded, sandbox: ready, cs: []ctr{{name: "main", state: exited}},
			want: []string{"stopPod"}},
		{name: "ephemeral container without its target", pod: ephemeral, sandbox: ready, cs: []ctr{{name: "main", state: running}},
			want: []string{"prepareSandbox", `rejectContainer debug "unable to find target container gone"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(planNow)
			backOff := flowcontrol.NewFakeBackOff(initialBackOff, maxBackOff, clk)
			for _, ago := range tc.raised {
				clk.SetTime(planNow.Add(-ago))
				backOff.Next(restartKey(tc.pod, &tc.pod.Spec.Containers[0]), clk.Now())
			}
			clk.SetTime(planNow)
			state := stateOf(tc.pod, tc.sandbox, tc.cs...)
			state.emptyOld = tc.emptyOld
			acts := plan(tc.pod, state, knowledge{now: planNow, probes: tc.probes, backOff: backOff})
			var got []string
			for _, a := range acts {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}
