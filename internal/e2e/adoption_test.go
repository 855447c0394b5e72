package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/images"
)

// TestStaticPodsAndAdoption: a manifest in the agent's pod-manifests
// directory runs as a static pod with a mirror pod in the API (deleting
// the mirror does not touch the container); an agent restart adopts the
// running containers (same container IDs, no restarts) and removes the
// container of a pod deleted while it was down; removing the manifest
// stops the static pod and deletes its mirror.
func TestStaticPodsAndAdoption(t *testing.T) {
	s := StartServer(t)
	a := StartAgent(t, s, "e2e-adopt")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-adopt")

	manifest := filepath.Join(a.DataDir, "agent", "pod-manifests", "static-web.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static-web, labels: {tier: static}}
spec:
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]
`, images.BusyboxRef)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"box", "gone"} {
		s.Kubectl(t, "run", name, "--image="+images.BusyboxRef, "--image-pull-policy=Never", "--command", "--",
			"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	}
	const mirror = "static-web-e2e-adopt"
	ids := map[string]string{}
	for _, name := range []string{mirror, "box", "gone"} {
		p := waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
			if p.Status.Phase != corev1.PodRunning || mainOrOnly(p).ContainerID == "" {
				return fmt.Sprintf("pod %s: phase %s", p.Name, p.Status.Phase)
			}
			return ""
		})
		ids[name] = strings.TrimPrefix(mainOrOnly(p).ContainerID, "containerd://")
	}
	m := getPod(t, client, mirror)
	if m.Annotations["kubernetes.io/config.mirror"] == "" || m.Annotations["kubernetes.io/config.source"] != "file" || m.Spec.NodeName != "e2e-adopt" {
		t.Errorf("mirror pod annotations %v on node %q, want config.mirror and config.source=file on e2e-adopt", m.Annotations, m.Spec.NodeName)
	}

	// Deleting the mirror pod: it comes back, the static pod runs on.
	s.Kubectl(t, "delete", "pod", mirror, "--wait=false")
	waitPod(t, client, mirror, time.Minute, func(p *corev1.Pod) string {
		if p.UID == m.UID || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			return "the mirror pod is not back yet"
		}
		return ""
	})
	if id := strings.TrimPrefix(mainOrOnly(getPod(t, client, mirror)).ContainerID, "containerd://"); id != ids[mirror] {
		t.Errorf("deleting the mirror pod restarted the static pod's container: %s, was %s", id, ids[mirror])
	}

	// The agent goes away; a pod is deleted meanwhile; the agent comes back.
	a.Stop()
	s.Kubectl(t, "delete", "pod", "gone", "--force", "--grace-period=0")
	a.Start()
	waitNodeReady(t, client, "e2e-adopt")
	eventually(t, 2*time.Minute, func() string {
		a.Alive()
		if strings.Contains(ctr(t, a.DataDir, "containers", "ls", "-q"), ids["gone"]) {
			return "the container of the pod deleted while the agent was down is still there"
		}
		return ""
	})
	for _, name := range []string{mirror, "box"} {
		cs := mainOrOnly(getPod(t, client, name))
		if id := strings.TrimPrefix(cs.ContainerID, "containerd://"); id != ids[name] || cs.RestartCount != 0 || cs.State.Running == nil {
			t.Errorf("after the agent restart pod %s has container %s (restarts %d, running %v), want the adopted %s",
				name, id, cs.RestartCount, cs.State.Running != nil, ids[name])
		}
	}

	// The manifest goes: so do the static pod and its mirror.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() string {
		if _, err := client.CoreV1().Pods("default").Get(context.Background(), mirror, metav1.GetOptions{}); err == nil {
			return "the mirror pod is still there"
		}
		if strings.Contains(ctr(t, a.DataDir, "containers", "ls", "-q"), ids[mirror]) {
			return "the static pod's container is still there"
		}
		return ""
	})
	s.Kubectl(t, "delete", "pod", "box", "--timeout=60s")
	waitGone(t, client, "box")
}

// mainOrOnly is the status of the pod's container main, or of its only one.
func mainOrOnly(p *corev1.Pod) corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 1 {
		return p.Status.ContainerStatuses[0]
	}
	return mainStatus(p)
}

func waitGone(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		if _, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return "pod " + name + " is still there"
		}
		return ""
	})
}
