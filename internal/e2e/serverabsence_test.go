package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/images"
)

// TestNodeSurvivesServerAbsence: the server stops for two minutes; the
// agent keeps running and so do its pods' containers, untouched; when the
// server is back the node is Ready again and the pod has the same
// container, never restarted.
func TestNodeSurvivesServerAbsence(t *testing.T) {
	s := StartServer(t)
	a := StartAgent(t, s, "e2e-lonely")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-lonely")
	s.Kubectl(t, "run", "steady", "--image="+images.BusyboxRef, "--image-pull-policy=Never", "--command", "--",
		"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	p := waitPod(t, client, "steady", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning {
			return "phase " + string(p.Status.Phase)
		}
		return ""
	})
	id := strings.TrimPrefix(mainOrOnly(p).ContainerID, "containerd://")

	s.Stop()
	away := time.Now()
	for time.Since(away) < 2*time.Minute {
		time.Sleep(10 * time.Second)
		a.Alive()
		if tasks := ctr(t, a.DataDir, "tasks", "ls"); !strings.Contains(tasks, id) || !strings.Contains(tasks, "RUNNING") {
			t.Fatalf("%v after the server stopped, the pod's container %s is not running:\n%s", time.Since(away).Round(time.Second), id, tasks)
		}
	}
	s.Start()
	waitNodeReady(t, client, "e2e-lonely")
	waitPod(t, client, "steady", time.Minute, func(p *corev1.Pod) string {
		cs := mainOrOnly(p)
		if got := strings.TrimPrefix(cs.ContainerID, "containerd://"); got != id || cs.RestartCount != 0 || cs.State.Running == nil || !cs.Ready {
			return fmt.Sprintf("container %s restarts %d running %v ready %v, want %s untouched", got, cs.RestartCount, cs.State.Running != nil, cs.Ready, id)
		}
		return ""
	})
	s.Kubectl(t, "delete", "pod", "steady", "--timeout=60s")
}
