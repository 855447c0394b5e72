package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/images"
)

// TestSecondAgentInItsOwnNetwork: an agent in a network namespace of its
// own (a node behind a veth pair, like a second machine), with its own
// containerd, is refused with a wrong token, joins with the right one,
// becomes Ready and runs a pod that `kubectl exec` reaches through its
// kubelet API.
func TestSecondAgentInItsOwnNetwork(t *testing.T) {
	requireRuntime(t)
	const hostIP, nodeIP = "10.199.77.1", "10.199.77.2"
	netns := fmt.Sprintf("orch-e2e-%d", os.Getpid())
	hostLink := fmt.Sprintf("oe2e%d", os.Getpid()%100000)
	setUpNetns(t, netns, hostLink, hostIP, nodeIP)

	s := StartServerAt(t, hostIP)
	server := fmt.Sprintf("https://%s:%d", hostIP, s.Port)

	// A wrong token: refused at once, saying so.
	wrong := strings.Repeat("0", 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+netns, orchBin, "agent", "--server", server,
		"--token", s.Token()[:strings.LastIndex(s.Token(), ":")+1]+wrong, "--data-dir", t.TempDir(), "--node-name", "e2e-far").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "token") {
		t.Fatalf("an agent with a wrong token: %v\n%s", err, out)
	}

	StartAgentIn(t, netns, server, s.Token(), "e2e-far", nodeIP)
	client := s.client(t)
	node := waitNodeReady(t, client, "e2e-far")
	if node.Status.Addresses[0].Address != nodeIP {
		t.Errorf("node addresses %v, want InternalIP %s", node.Status.Addresses, nodeIP)
	}
	s.Kubectl(t, "run", "far", "--image="+images.BusyboxRef, "--image-pull-policy=Never", "--command", "--",
		"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	waitPod(t, client, "far", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "e2e-far" {
			return fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
		}
		return ""
	})
	if got := s.Kubectl(t, "exec", "far", "--", "cat", "/proc/sys/kernel/hostname"); strings.TrimSpace(got) != "far" {
		t.Errorf("kubectl exec on the far node: hostname %q", got)
	}
	s.Kubectl(t, "delete", "pod", "far", "--timeout=60s")
}

// setUpNetns makes network namespace netns joined to the host by a veth
// pair (hostLink on the host at hostIP/24, eth0 inside at nodeIP/24, with
// a default route to the host); it is removed when t ends.
func setUpNetns(t *testing.T, netns, hostLink, hostIP, nodeIP string) {
	t.Helper()
	makeNodeNetns(t, netns, hostLink, nodeIP, hostIP)
	mustRun(t, "ip", "addr", "add", hostIP+"/24", "dev", hostLink)
	mustRun(t, "ip", "link", "set", hostLink, "up")
}

// makeNodeNetns makes network namespace netns with eth0 at ip/24, the
// peer of hostLink on the host, and a default route via gateway; both go
// when t ends. The caller connects hostLink on the host side.
func makeNodeNetns(t testing.TB, netns, hostLink, ip, gateway string) {
	t.Helper()
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", netns).Run()
		exec.Command("ip", "link", "del", hostLink).Run()
	})
	mustRun(t, "ip", "netns", "add", netns)
	mustRun(t, "ip", "link", "add", hostLink, "type", "veth", "peer", "name", "eth0", "netns", netns)
	mustRun(t, "ip", "-n", netns, "addr", "add", ip+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", netns, "link", "set", "eth0", "up")
	mustRun(t, "ip", "-n", netns, "link", "set", "lo", "up")
	mustRun(t, "ip", "-n", netns, "route", "add", "default", "via", gateway)
}
