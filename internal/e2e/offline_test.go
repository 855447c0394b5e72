package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
)

// offlineApp is a web pod serving a Secret's file, its Service, and a
// client pod to ask it from.
var offlineApp = fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: page}
stringData: {index.html: "the page from the secret"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: e2e-offline
  containers:
  - {name: web, image: %[1]s, imagePullPolicy: Never, command: [httpd, -f, -p, "8080", -h, /www], volumeMounts: [{name: page, mountPath: /www}]}
  volumes: [{name: page, secret: {secretName: page}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeName: e2e-offline
  containers:
  - {name: client, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"]}
`, images.BusyboxRef)

// TestOfflineReboot: with the server stopped, the node "reboots" (the
// agent stops, containerd and every shim are killed, the runtime's state
// under /run, the mounts and the Service rules are gone; the data dir
// stays). The agent starts with no server reachable and brings the pods
// back from its local store: the web pod serves its Secret's file, and
// the client reaches it through the Service's name. When the server is
// back the node is Ready with the same two pods, Running.
func TestOfflineReboot(t *testing.T) {
	s := StartServer(t)
	a := StartAgent(t, s, "e2e-offline")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-offline")
	s.KubectlIn(t, offlineApp, "apply", "-f", "-")
	for _, name := range []string{"web", "client"} {
		waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
			if p.Status.Phase != corev1.PodRunning {
				return "phase " + string(p.Status.Phase)
			}
			return ""
		})
	}
	eventually(t, time.Minute, func() string {
		if got := askWeb(t, a); got != "the page from the secret" {
			return fmt.Sprintf("before the reboot, the client got %q from the web Service", got)
		}
		return ""
	})

	s.Stop()
	a.Stop()
	cleanUpRuntime(t, a.DataDir)
	cleanUpNetwork(t, nil)
	rebooted := time.Now()
	a.Start()
	eventually(t, 2*time.Minute, func() string {
		for _, name := range []string{"web", "client"} {
			if len(runningContainers(t, a, name)) == 0 {
				return name + " is not running"
			}
		}
		return ""
	})
	t.Logf("offline, the pods run again %v after the agent started", time.Since(rebooted).Round(100*time.Millisecond))
	eventually(t, time.Minute, func() string {
		if got := askWeb(t, a); got != "the page from the secret" {
			return fmt.Sprintf("offline, the client got %q from the web Service", got)
		}
		return ""
	})

	s.Start()
	waitNodeReady(t, client, "e2e-offline")
	eventually(t, time.Minute, func() string {
		pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var states []string
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "e2e-offline" {
				states = append(states, p.Name+" "+string(p.Status.Phase))
			}
		}
		if len(pods.Items) != 2 || len(states) > 0 {
			return fmt.Sprintf("%d pods, not running: %v", len(pods.Items), states)
		}
		return ""
	})
}

// runningContainers are the IDs of the running containers named name in
// the agent's containerd.
func runningContainers(t testing.TB, a *Agent, name string) []string {
	t.Helper()
	ids := map[string]bool{}
	for _, id := range strings.Fields(ctr(t, a.DataDir, "containers", "ls", "-q", fmt.Sprintf(`labels."io.kubernetes.container.name"==%s`, name))) {
		ids[id] = true
	}
	var running []string
	for _, line := range strings.Split(ctr(t, a.DataDir, "tasks", "ls"), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && ids[f[0]] && f[2] == "RUNNING" {
			running = append(running, f[0])
		}
	}
	return running
}

// askWeb is what the client pod gets from http://web.default.svc.cluster.local/,
// asked inside its container through containerd (no server needed).
func askWeb(t *testing.T, a *Agent) string {
	t.Helper()
	ids := runningContainers(t, a, "client")
	if len(ids) == 0 {
		return "(the client is not running)"
	}
	id := ids[0]
	out, err := ctrOutput(a.DataDir, "tasks", "exec", "--exec-id", fmt.Sprintf("ask-%d", time.Now().UnixNano()), id,
		"sh", "-c", "timeout 5 wget -O- http://web.default.svc.cluster.local/ 2>/dev/null")
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "level=warning") { // containerd's word on cgroup v1
			lines = append(lines, line)
		}
	}
	if err != nil {
		lines = append(lines, err.Error())
	}
	return strings.Join(lines, "\n")
}
