package pods

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestEphemeralContainerRunsOnceInTargetNamespace(t *testing.T) {
	h, _ := clockHarness(t, testPod("p", corev1.RestartPolicyAlways))
	h.mustSync("p")
	p := h.pod("p")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", Command: []string{"sh"}, Stdin: true, TTY: true},
		TargetContainerName:      "main",
	}}
	h.indexer.Update(p)
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"debugger", "main"}) {
		t.Fatalf("running %v, want the ephemeral container beside main", got)
	}
	debugger, main := h.containers("debugger")[0], h.containers("main")[0]
	cfg := h.rt.ContainerConfig(debugger.Id)
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != main.Id {
		t.Errorf("namespace options %+v, want the PID namespace of main (%s)", ns, main.Id)
	}
	if !cfg.Stdin || !cfg.Tty {
		t.Errorf("stdin %v tty %v, want both (kubectl debug -it attaches)", cfg.Stdin, cfg.Tty)
	}
	st := h.pod("p").Status
	if len(st.EphemeralContainerStatuses) != 1 || st.EphemeralContainerStatuses[0].State.Running == nil {
		t.Fatalf("ephemeral statuses %+v, want debugger running", st.EphemeralContainerStatuses)
	}

	// It is never restarted, whatever the pod's restartPolicy.
	h.exitNewest("debugger", 0)
	h.mustSync("p")
	h.mustSync("p")
	if n := len(h.containers("debugger")); n != 1 {
		t.Fatalf("%d debugger containers, want 1: ephemeral containers do not restart", n)
	}
	st = h.pod("p").Status
	if es := st.EphemeralContainerStatuses; len(es) != 1 || es[0].State.Terminated == nil || es[0].RestartCount != 0 {
		t.Errorf("ephemeral status %+v, want terminated", es)
	}
	if st.Phase != corev1.PodRunning || findCondition(st.Conditions, corev1.PodReady).Status != corev1.ConditionTrue {
		t.Errorf("phase %s, Ready %+v: an exited ephemeral container must not count", st.Phase, findCondition(st.Conditions, corev1.PodReady))
	}
}
