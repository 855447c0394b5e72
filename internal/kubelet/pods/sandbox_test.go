package pods

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxes are the runtime's sandboxes, oldest first.
func (h *harness) sandboxes() []*runtimeapi.PodSandbox {
	h.t.Helper()
	all, err := h.rt.ListPodSandbox(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b *runtimeapi.PodSandbox) int { return int(a.Metadata.Attempt) - int(b.Metadata.Attempt) })
	return all
}

// killSandbox plays the death of the pod's sandbox (its pause process).
func (h *harness) killSandbox() {
	h.t.Helper()
	sbs := h.sandboxes()
	if err := h.rt.StopPodSandbox(context.Background(), sbs[len(sbs)-1].Id); err != nil {
		h.t.Fatal(err)
	}
}

func TestDeadSandboxIsReplaced(t *testing.T) {
	p := initPod(corev1.RestartPolicyAlways)
	h, now := clockHarness(t, p)
	h.mustSync("p")
	h.exitNewest("init1", 0)
	h.mustSync("p")
	h.exitNewest("init2", 0)
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("running %v", got)
	}
	h.drainEvents()

	*now = now.Add(time.Minute)
	h.killSandbox()
	h.mustSync("p")
	sbs := h.sandboxes()
	if len(sbs) != 2 || sbs[1].Metadata.Attempt != 1 || sbs[1].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes %v, want the dead one and a ready one of attempt 1", sbs)
	}
	if !slices.ContainsFunc(h.drainEvents(), func(e string) bool { return strings.Contains(e, "SandboxChanged") }) {
		t.Error("no SandboxChanged event")
	}
	// A new sandbox runs the init containers again, from the first, as
	// upstream's; the regular container keeps its restart count.
	if got := h.running(); !slices.Equal(got, []string{"init1"}) {
		t.Fatalf("running %v in the new sandbox, want init1", got)
	}
	h.exitNewest("init1", 0)
	h.mustSync("p")
	h.exitNewest("init2", 0)
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("running %v, want main again", got)
	}
	st := h.pod("p").Status
	main := statusOf(st.ContainerStatuses, "main")
	if main.RestartCount != 1 || main.LastTerminationState.Terminated == nil || main.LastTerminationState.Terminated.ExitCode != 137 {
		t.Errorf("main %+v, want restartCount 1 and lastState exit 137", main)
	}
	if st.Phase != corev1.PodRunning {
		t.Errorf("phase %s", st.Phase)
	}
	if c := findCondition(st.Conditions, corev1.PodReadyToStartContainers); c.Status != corev1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers %+v", c)
	}

	// Once newer attempts replaced every container of the old sandbox, it
	// is removed.
	*now = now.Add(time.Minute)
	h.exitNewest("main", 1)
	h.mustSync("p")
	h.mustSync("p")
	if sbs := h.sandboxes(); len(sbs) != 1 || sbs[0].Metadata.Attempt != 1 {
		t.Errorf("sandboxes %v, want the new one alone", sbs)
	}
}

func TestDeadSandboxOfFinishedPodIsNotReplaced(t *testing.T) {
	h, _ := clockHarness(t, testPod("p", corev1.RestartPolicyNever))
	h.mustSync("p")
	h.killSandbox()
	h.mustSync("p")
	if sbs := h.sandboxes(); len(sbs) != 1 {
		t.Fatalf("sandboxes %v, want no new one under restartPolicy Never", sbs)
	}
	if st := h.pod("p").Status; st.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed (its container was killed)", st.Phase)
	}
}
