package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch/internal/agent"
	"orch/internal/kubelet/images"
)

// TestServerRunsPods is what `make run` gives: `orch server` with its own
// agent. Its node turns Ready with the control-plane role; `kubectl run`
// and `kubectl create deployment` of the imported busybox image run real
// containers, which containerd's ctr lists, with pod IPs on the node's
// podCIDR and the container's output in its log file; deleting the pod and
// the deployment stops and removes their containers.
func TestServerRunsPods(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	node := waitNodeReady(t, client, "e2e-server")
	// The server labels its own Node (a kubelet may not set role labels).
	eventually(t, time.Minute, func() string {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "e2e-server", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if n.Labels["node-role.kubernetes.io/control-plane"] != "true" {
			return fmt.Sprintf("labels = %v, want node-role.kubernetes.io/control-plane=true", n.Labels)
		}
		return ""
	})

	s.Kubectl(t, "run", "box", "--image="+images.BusyboxRef, "--image-pull-policy=Never", "--command", "--",
		"sh", "-c", "trap 'exit 0' TERM; echo hello from box; sleep 3600 & wait")
	s.Kubectl(t, "create", "deployment", "web", "--image="+images.BusyboxRef, "--replicas=2", "--",
		"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	s.Kubectl(t, "wait", "--for=condition=Ready", "pod/box", "--timeout=120s")
	s.Kubectl(t, "rollout", "status", "deployment/web", "--timeout=120s")

	ctx := context.Background()
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podCIDR := netip.MustParsePrefix(node.Spec.PodCIDR)
	listed := ctr(t, s.Dir, "containers", "ls", "-q")
	ids := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "e2e-server" || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod %s: phase %s on %q with %d container statuses", p.Name, p.Status.Phase, p.Spec.NodeName, len(p.Status.ContainerStatuses))
		}
		if ip, err := netip.ParseAddr(p.Status.PodIP); err != nil || !podCIDR.Contains(ip) {
			t.Errorf("pod %s IP %q is not on the node's podCIDR %s", p.Name, p.Status.PodIP, podCIDR)
		}
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		if !strings.Contains(listed, id) {
			t.Errorf("ctr containers ls does not list pod %s's container %s:\n%s", p.Name, id, listed)
		}
		ids[p.Name] = id
	}
	if len(ids) != 3 {
		t.Fatalf("pods %v, want box and two of web", ids)
	}
	box, err := client.CoreV1().Pods("default").Get(ctx, "box", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(s.Dir, "agent", "pod-logs", fmt.Sprintf("default_box_%s", box.UID), "box", "0.log")
	eventually(t, 30*time.Second, func() string {
		data, err := os.ReadFile(logFile)
		if err != nil || !strings.Contains(string(data), " stdout F hello from box\n") {
			return fmt.Sprintf("log %s: %v %q", logFile, err, data)
		}
		return ""
	})

	s.Kubectl(t, "delete", "pod", "box", "--timeout=60s")
	s.Kubectl(t, "delete", "deployment", "web")
	eventually(t, 90*time.Second, func() string {
		listed := ctr(t, s.Dir, "containers", "ls", "-q")
		for name, id := range ids {
			if strings.Contains(listed, id) {
				return fmt.Sprintf("the container of deleted pod %s is still in containerd", name)
			}
		}
		left, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(left.Items) > 0 {
			return fmt.Sprintf("pods left: %v %v", err, len(left.Items))
		}
		return ""
	})
}

// waitNodeReady waits until node name is Ready and returns it.
func waitNodeReady(t testing.TB, client kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	eventually(t, 2*time.Minute, func() string {
		n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				node = n
				return ""
			}
			if c.Type == corev1.NodeReady {
				return fmt.Sprintf("node %s Ready=%s: %s", name, c.Status, c.Message)
			}
		}
		return "node " + name + " has no Ready condition"
	})
	return node
}

// client is a client-go clientset with the admin kubeconfig, not
// throttled on the client side (so that benchmarks time the server).
func (s *Server) client(t testing.TB) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 1000
	return kubernetes.NewForConfigOrDie(rc)
}

// ctr runs containerd's ctr (`orch ctr`) against the containerd of the
// agent with dataDir, in the k8s.io namespace.
func ctr(t testing.TB, dataDir string, args ...string) string {
	t.Helper()
	sock := filepath.Join(agent.ContainerdState(dataDir), "containerd.sock")
	// Right after an agent (re)starts, its containerd may not listen yet.
	eventually(t, time.Minute, func() string {
		if _, err := os.Stat(sock); err != nil {
			return "containerd's socket: " + err.Error()
		}
		return ""
	})
	out, err := ctrOutput(dataDir, args...)
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ctrOutput is ctr that leaves a failure to its caller: what ctr wrote
// (stdout and stderr) and how it exited. It does not wait for the socket.
func ctrOutput(dataDir string, args ...string) (string, error) {
	sock := filepath.Join(agent.ContainerdState(dataDir), "containerd.sock")
	out, err := exec.Command(orchBin, append([]string{"ctr", "--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	return string(out), err
}
