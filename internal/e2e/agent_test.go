package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch/internal/agent"
)

// TestAgentRegistersNode runs the real `orch agent` as root against a real
// server, with the containerd it starts under its data dir: the Node
// appears with containerd's version and the flags' labels and taint (some
// given through a config file) and turns Ready once its pod network is
// configured, its Lease is renewed; SIGTERM stops the agent and its
// containerd.
func TestAgentRegistersNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs containerd and must run as root (make test does; scripts/test-deps.sh installs what it needs)")
	}
	s := StartServer(t)
	token, err := os.ReadFile(filepath.Join(s.Dir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("node-label: [e2e=yes, tier=edge]\nnode-taint: e2e=yes:NoSchedule\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	var logs bytes.Buffer
	cmd := exec.Command(orchBin, "agent", "--config", config, "--server", s.URL(), "--token", strings.TrimSpace(string(token)),
		"--data-dir", dataDir, "--node-name", "e2e-agent", "--node-ip", agentIP)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
		os.RemoveAll(agent.ContainerdState(dataDir)) // containerd's runtime state in /run
		if t.Failed() {
			t.Logf("agent logs:\n%s", logs.String())
			if data, err := os.ReadFile(filepath.Join(dataDir, "agent", "containerd", "containerd.log")); err == nil {
				t.Logf("containerd log (tail):\n%s", truncateHead(string(data), 3000))
			}
		}
	})

	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	checkAlive := func() string {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("orch agent exited early: %v", err)
		default:
		}
		return ""
	}

	eventually(t, 2*time.Minute, func() string {
		checkAlive()
		n, err := client.CoreV1().Nodes().Get(ctx, "e2e-agent", metav1.GetOptions{})
		if err != nil {
			return "node e2e-agent: " + err.Error()
		}
		// The containerd built into orch (2.x), not a host's.
		if v := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(v, "containerd://2.") || strings.Contains(v, "unknown") {
			return "containerRuntimeVersion is " + v
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
					return fmt.Sprintf("Ready = %s/%s/%q", c.Status, c.Reason, c.Message)
				}
				return ""
			}
		}
		return "no Ready condition yet"
	})
	n, err := client.CoreV1().Nodes().Get(ctx, "e2e-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["e2e"] != "yes" || n.Labels["tier"] != "edge" || n.Labels["kubernetes.io/hostname"] != "e2e-agent" {
		t.Errorf("labels = %v, want e2e=yes and tier=edge from the config file", n.Labels)
	}
	hasTaint := false
	for _, taint := range n.Spec.Taints {
		hasTaint = hasTaint || (taint.Key == "e2e" && taint.Value == "yes" && taint.Effect == corev1.TaintEffectNoSchedule)
	}
	if !hasTaint {
		t.Errorf("taints = %v, want e2e=yes:NoSchedule", n.Spec.Taints)
	}
	if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: agentIP}) {
		t.Errorf("addresses = %v, want InternalIP "+agentIP+" first", n.Status.Addresses)
	}
	if n.Status.NodeInfo.KubeletVersion == "" || n.Status.NodeInfo.KernelVersion == "" {
		t.Errorf("nodeInfo = %+v", n.Status.NodeInfo)
	}

	renewals := map[string]bool{}
	eventually(t, 90*time.Second, func() string {
		checkAlive()
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, "e2e-agent", metav1.GetOptions{})
		if err != nil {
			return "lease: " + err.Error()
		}
		if l.Spec.RenewTime != nil {
			renewals[l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)] = true
		}
		if len(renewals) < 3 {
			return "lease renew times seen: " + strings.Join(keys(renewals), ", ")
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID {
			t.Errorf("lease owner references = %v, want the Node %s", l.OwnerReferences, n.UID)
		}
		return ""
	})

	// nodeipam gives the node a podCIDR; the agent writes the bridge
	// network's conflist for it where its containerd reads CNI configs.
	conflist := filepath.Join(dataDir, "agent", "etc", "cni", "net.d", "10-orch.conflist")
	eventually(t, 30*time.Second, func() string {
		node, err := client.CoreV1().Nodes().Get(ctx, "e2e-agent", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		data, err := os.ReadFile(conflist)
		if err != nil {
			return "no conflist: " + err.Error()
		}
		if node.Spec.PodCIDR == "" || !strings.Contains(string(data), `"subnet": "`+node.Spec.PodCIDR+`"`) {
			return fmt.Sprintf("conflist does not use the node's podCIDR %q:\n%s", node.Spec.PodCIDR, data)
		}
		return ""
	})

	// SIGTERM: the agent stops, and its containerd with it.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("orch agent after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("orch agent did not exit within 60 s of SIGTERM")
	}
	if left := processesMentioning(dataDir); len(left) > 0 {
		t.Errorf("processes of the agent's data dir left after it stopped: %v", left)
	}
}

// TestAgentRefusesBadInput: a wrong token, a missing --server, a bad taint,
// a runtime endpoint where nothing answers and an unknown config key make
// `orch agent` exit non-zero at once, saying why.
func TestAgentRefusesBadInput(t *testing.T) {
	s := StartServer(t)
	tokenBytes, err := os.ReadFile(filepath.Join(s.Dir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenBytes))
	prefix, secret, ok := strings.Cut(token, "::server:")
	if !ok {
		t.Fatalf("token %q is not K10<hash>::server:<secret>", token)
	}
	wrongSecret := prefix + "::server:" + strings.Repeat("0", len(secret))
	wrongCA := "K10" + strings.Repeat("0", 64) + "::server:" + secret
	dir := t.TempDir()
	emptyConfig := filepath.Join(dir, "empty.yaml")
	badConfig := filepath.Join(dir, "bad.yaml")
	os.WriteFile(emptyConfig, nil, 0o600)
	os.WriteFile(badConfig, []byte("node-lables: [a=b]\n"), 0o600)
	base := func(config string) []string {
		return []string{"agent", "--config", config, "--data-dir", filepath.Join(dir, "data"), "--node-name", "bad-agent", "--node-ip", agentIP}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong secret", append(base(emptyConfig), "--server", s.URL(), "--token", wrongSecret), "token"},
		{"wrong CA hash", append(base(emptyConfig), "--server", s.URL(), "--token", wrongCA), "token"},
		{"malformed token", append(base(emptyConfig), "--server", s.URL(), "--token", "not-a-token"), "token"},
		{"no token", append(base(emptyConfig), "--server", s.URL()), "--token or --token-file is required"},
		{"no server", append(base(emptyConfig), "--token", token),
			"orch agent: --server is required (the URL of an orch server, e.g. https://10.0.0.1:6443)"},
		{"bad taint", append(base(emptyConfig), "--server", s.URL(), "--token", token, "--node-taint", "a=b:Never"), "--node-taint"},
		{"no runtime at the endpoint", append(base(emptyConfig), "--server", s.URL(), "--token", token,
			"--container-runtime-endpoint", "unix://"+filepath.Join(dir, "none.sock")), "no container runtime answers"},
		{"unknown config key", append(base(badConfig), "--server", s.URL(), "--token", token), `unknown key "node-lables"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, orchBin, tc.args...).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("orch agent did not exit within 30 s; output:\n%s", out)
			}
			if err == nil {
				t.Fatalf("orch agent exited 0; output:\n%s", out)
			}
			t.Logf("orch %s:\n%s", strings.Join(tc.args, " "), out)
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, out)
			}
		})
	}
	c, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(c).CoreV1().Nodes().Get(context.Background(), "bad-agent", metav1.GetOptions{}); err == nil {
		t.Error("a refused agent registered its Node")
	}
}

// processesMentioning lists the processes whose command line contains s.
func processesMentioning(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(line, s) {
			found = append(found, e.Name()+": "+line)
		}
	}
	return found
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func truncateHead(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
