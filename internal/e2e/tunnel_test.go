package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTunnelWhenKubeletPortDropped: with iptables dropping the server's
// packets to the agent's kubelet port, the server reaches the kubelet
// through the tunnel the agent opened: kubectl logs -f, exec -it,
// port-forward and top work.
func TestTunnelWhenKubeletPortDropped(t *testing.T) {
	s := StartServer(t)
	StartAgent(t, s, "e2e-nat")
	client := s.client(t)
	node := waitNodeReady(t, client, "e2e-nat")
	port := strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port))
	rule := []string{"OUTPUT", "-d", agentIP, "-p", "tcp", "--dport", port, "-j", "DROP"}
	if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("iptables", append([]string{"-D"}, rule...)...).Run() })
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(agentIP, port), 2*time.Second); err == nil {
		c.Close()
		t.Fatal("the kubelet port is still reachable with the DROP rule in place")
	}

	s.KubectlIn(t, busyboxPod("web", "Always",
		`mkdir -p /www; echo hello-through-the-tunnel > /www/index.html; httpd -p 8080 -h /www; i=0; while true; do i=$((i+1)); echo "line $i"; sleep 1; done`,
		"    ports: [{containerPort: 8080}]\n", ""), "apply", "-f", "-")
	s.Kubectl(t, "wait", "--for=condition=Ready", "pod/web", "--timeout=120s")

	follow := s.StartKubectl(t, "logs", "-f", "web")
	follow.WaitFor(t, 30*time.Second, func(out string) string {
		if strings.Count(out, "line ") < 3 {
			return "kubectl logs -f has not streamed 3 lines yet: " + out
		}
		return ""
	})
	follow.Stop()

	execInteractive(t, s, "web")
	portForwardGet(t, s, "web", 1, "hello-through-the-tunnel\n")

	eventually(t, time.Minute, func() string {
		r := s.Run(t, Cmd{Args: []string{"top", "node", "e2e-nat"}})
		if r.Code != 0 || !strings.Contains(r.Stdout, "e2e-nat") || strings.Contains(r.Stdout, "<unknown>") {
			return fmt.Sprintf("kubectl top node: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		return ""
	})
}
