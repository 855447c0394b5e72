package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/envtest"
	"orch/internal/kubelet/images"
)

// TestKubectlStreaming drives the kubelet API through the apiserver with
// the real kubectl against real containers: logs (-f, --previous), exec
// (with stdin, and interactive through a terminal), port-forward to a
// busybox httpd, top (metrics.k8s.io from the kubelet's summary), cp in
// both directions, and debug (an ephemeral container, attached).
func TestKubectlStreaming(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")
	s.KubectlIn(t, busyboxPod("web", "Always",
		`mkdir -p /www /tmp; echo hello-from-httpd > /www/index.html; httpd -p 8080 -h /www; i=0; while true; do i=$((i+1)); echo "line $i"; sleep 1; done`,
		"    ports: [{containerPort: 8080}]\n", ""), "apply", "-f", "-")
	s.KubectlIn(t, busyboxPod("crashy", "Always", `echo "run at $(date +%s%N)"; sleep 2; exit 1`, "", ""), "apply", "-f", "-")
	s.Kubectl(t, "wait", "--for=condition=Ready", "pod/web", "--timeout=120s")

	t.Run("logs", func(t *testing.T) {
		eventually(t, 30*time.Second, func() string {
			out := s.Kubectl(t, "logs", "web", "--tail=2")
			if n := strings.Count(out, "line "); n != 2 {
				return fmt.Sprintf("kubectl logs --tail=2 gave %d lines: %q", n, out)
			}
			return ""
		})
		follow := s.StartKubectl(t, "logs", "-f", "web", "--since=1s")
		follow.WaitFor(t, 30*time.Second, func(out string) string {
			if strings.Count(out, "line ") < 3 {
				return "kubectl logs -f has not streamed 3 lines yet: " + out
			}
			return ""
		})
		follow.Stop()
		waitPod(t, client, "crashy", 2*time.Minute, func(p *corev1.Pod) string {
			if mainStatus(p).RestartCount < 1 {
				return "crashy has not restarted yet"
			}
			return ""
		})
		prev := s.Kubectl(t, "logs", "crashy", "--previous")
		if !strings.HasPrefix(prev, "run at ") {
			t.Errorf("kubectl logs --previous = %q", prev)
		}
	})

	t.Run("exec", func(t *testing.T) {
		if out := s.Kubectl(t, "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; cat /www/index.html"); out != "out\nhello-from-httpd\n" {
			t.Errorf("kubectl exec stdout = %q", out)
		}
		if out := s.KubectlIn(t, "from stdin\n", "exec", "-i", "web", "--", "cat"); out != "from stdin\n" {
			t.Errorf("kubectl exec -i cat = %q", out)
		}
		r := s.Run(t, Cmd{Args: []string{"exec", "web", "--", "sh", "-c", "exit 7"}})
		if r.Code != 7 {
			t.Errorf("kubectl exec of exit 7 exited %d; stderr %q", r.Code, r.Stderr)
		}
		execInteractive(t, s, "web")
	})

	t.Run("portForward", func(t *testing.T) {
		portForwardGet(t, s, "web", 3, "hello-from-httpd\n") // several connections over one forward
	})

	t.Run("top", func(t *testing.T) {
		// The kubelet's CPU rate needs two samples: the first answer may lack it.
		eventually(t, time.Minute, func() string {
			r := s.Run(t, Cmd{Args: []string{"top", "node", "e2e-server"}})
			if r.Code != 0 || !strings.Contains(r.Stdout, "e2e-server") || strings.Contains(r.Stdout, "<unknown>") {
				return fmt.Sprintf("kubectl top node: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			return ""
		})
		eventually(t, time.Minute, func() string {
			r := s.Run(t, Cmd{Args: []string{"top", "pod", "web", "--containers"}})
			if r.Code != 0 || !strings.Contains(r.Stdout, "main") || !strings.Contains(r.Stdout, "Mi") {
				return fmt.Sprintf("kubectl top pod: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			return ""
		})
	})

	t.Run("cp", func(t *testing.T) {
		dir := t.TempDir()
		local := filepath.Join(dir, "up.txt")
		if err := os.WriteFile(local, []byte("copied up\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Kubectl(t, "cp", local, "web:/tmp/up.txt")
		if out := s.Kubectl(t, "exec", "web", "--", "cat", "/tmp/up.txt"); out != "copied up\n" {
			t.Errorf("after kubectl cp into the pod: %q", out)
		}
		back := filepath.Join(dir, "back.html")
		s.Kubectl(t, "cp", "web:/www/index.html", back)
		if data, err := os.ReadFile(back); err != nil || string(data) != "hello-from-httpd\n" {
			t.Errorf("after kubectl cp out of the pod: %q %v", data, err)
		}
	})

	t.Run("debug", func(t *testing.T) {
		// An ephemeral container in the PID namespace of main sees its
		// processes (httpd); -it attaches to it through a terminal.
		cmd := exec.Command("script", "-qec", orchBin+" kubectl debug web -it -c dbg --target=main --image-pull-policy=Never --image="+images.BusyboxRef+
			" -- sh -c 'sleep 2; ps; echo debug-ok'", "/dev/null")
		cmd.Env = s.kubectlEnv(nil)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "httpd -p 8080") || !strings.Contains(string(out), "debug-ok") {
			t.Errorf("kubectl debug -it: %v\n%s", err, out)
		}
		p := waitPod(t, client, "web", time.Minute, func(p *corev1.Pod) string {
			if es := p.Status.EphemeralContainerStatuses; len(es) != 1 || es[0].State.Terminated == nil {
				return fmt.Sprintf("ephemeral statuses %+v", es)
			}
			return ""
		})
		if term := p.Status.EphemeralContainerStatuses[0].State.Terminated; term.ExitCode != 0 {
			t.Errorf("the debug container ended %+v, want exit 0", term)
		}
		if out := s.Kubectl(t, "logs", "web", "-c", "dbg"); !strings.Contains(out, "debug-ok") {
			t.Errorf("kubectl logs -c dbg = %q", out)
		}
	})
}

// execInteractive runs `kubectl exec -it pod` in a terminal (script(1)
// gives kubectl one) and checks the shell had one.
func execInteractive(t *testing.T, s *Server, pod string) {
	t.Helper()
	cmd := exec.Command("script", "-qec", orchBin+" kubectl exec -it "+pod+" -- sh -c 'tty; echo interactive-ok'", "/dev/null")
	cmd.Env = s.kubectlEnv(nil)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/dev/pts/") || !strings.Contains(string(out), "interactive-ok") {
		t.Errorf("kubectl exec -it: %v\n%s", err, out)
	}
}

// portForwardGet forwards a local port to pod's 8080 with kubectl
// port-forward and GETs /index.html through it n times, each answer want.
func portForwardGet(t *testing.T, s *Server, pod string, n int, want string) {
	t.Helper()
	port := envtest.FreePort(t)
	pf := s.StartKubectl(t, "port-forward", "pod/"+pod, strconv.Itoa(port)+":8080")
	defer pf.Stop()
	pf.WaitFor(t, 30*time.Second, func(out string) string {
		if !strings.Contains(out, "Forwarding from") {
			return "port-forward not ready: " + out
		}
		return ""
	})
	for range n {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			t.Fatalf("GET through port-forward: %v\nkubectl: %s", err, pf.Output())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("GET through port-forward = %d %q, want %q", resp.StatusCode, body, want)
		}
	}
}
