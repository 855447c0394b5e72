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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/images"
)

// offlineApp is a web pod serving a Secret's file, its Service, a client
// pod to ask it from, and a NetworkPolicy that lets only the namespace's
// pods reach the web pod.
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
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {}}]
    ports: [{port: 8080}]
`, images.BusyboxRef)

// TestOfflineReboot: with the server stopped, the node "reboots" (the
// agent stops, containerd and every shim are killed, the runtime's state
// under /run, the mounts and the Service rules are gone; the data dir
// stays). The agent starts with no server reachable and brings the pods
// back from its local store: the web pod serves its Secret's file, and
// the client reaches it through the Service's name. When the server is
// back the node is Ready with the same two pods, Running.
func TestOfflineReboot(t *testing.T) {
	s, a, client := startOfflineApp(t)
	eventually(t, time.Minute, func() string {
		if got := askWeb(t, a); got != "the page from the secret" {
			return fmt.Sprintf("before the reboot, the client got %q from the web Service", got)
		}
		return ""
	})

	s.Stop()
	a.Stop()
	rebootOffline(t, a)

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

// startOfflineApp starts a server and agent e2e-offline, and offlineApp
// on it.
func startOfflineApp(t *testing.T) (*Server, *Agent, kubernetes.Interface) {
	t.Helper()
	s := StartServer(t)
	a := StartAgent(t, s, "e2e-offline")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-offline")
	s.KubectlIn(t, offlineApp, "apply", "-f", "-")
	for _, name := range []string{"web", "client"} {
		waitRunning(t, client, name)
	}
	return s, a, client
}

// rebootOffline "reboots" the node of the stopped agent a (its runtime and
// Service rules go) and starts the agent with no server: offlineApp's pods
// run again, and the client gets the web page through the Service.
func rebootOffline(t *testing.T, a *Agent) {
	t.Helper()
	cleanUpRuntime(t, a.DataDir)
	cleanUpNetwork(t, nil)
	rebooted := time.Now()
	a.Start()
	eventually(t, 2*time.Minute, func() string {
		for _, name := range []string{"web", "client"} {
			if len(runningContainers(t, a.DataDir, name)) == 0 {
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
	// The reboot removed the policy rules too: the agent wrote them again
	// from its store.
	eventually(t, 30*time.Second, func() string {
		out, _ := exec.Command("iptables", "-S", "KUBE-NP-FORWARD").CombinedOutput()
		if !strings.Contains(string(out), `--comment "default/web ingress"`) {
			return "offline, the web pod is not isolated by its NetworkPolicy:\n" + string(out)
		}
		return ""
	})
}

// runningContainers are the IDs of the running containers named name in
// the containerd of the agent with dataDir.
func runningContainers(t testing.TB, dataDir, name string) []string {
	t.Helper()
	ids := map[string]bool{}
	for _, id := range strings.Fields(ctr(t, dataDir, "containers", "ls", "-q", fmt.Sprintf(`labels."io.kubernetes.container.name"==%s`, name))) {
		ids[id] = true
	}
	var running []string
	for _, line := range strings.Split(ctr(t, dataDir, "tasks", "ls"), "\n") {
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
	ids := runningContainers(t, a.DataDir, "client")
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

// TestServerWithoutQuorumRunsItsPods: one of two servers, whose own agent
// runs a pod, "reboots" while the other is down. Its etcd has no quorum,
// so there is no API; its agent starts meanwhile and runs the pod again
// from its local store. With the other server back, the API answers and
// the node is Ready with the same pod Running in the container it runs
// (restarted once: the reboot killed the first).
func TestServerWithoutQuorumRunsItsPods(t *testing.T) {
	requireRuntime(t)
	const hostIP = "10.199.84.1"
	bridge := makeBridge(t, "oqbr", hostIP)
	var servers []*Server
	for i, ip := range []string{"10.199.84.21", "10.199.84.22"} {
		ns := fmt.Sprintf("orch-quorum-%d-%d", os.Getpid(), i)
		attachNetns(t, ns, fmt.Sprintf("oq%d%d", i, os.Getpid()%100000), bridge, ip, hostIP)
		if i == 0 {
			servers = append(servers, newServerIn(t, ns, ip, true, "--node-ip", ip, "--cluster-init"))
		} else {
			servers = append(servers, newServerIn(t, ns, ip, false, "--node-ip", ip, "--node-name", "quorum-1",
				"--server", servers[0].URL(), "--token", servers[0].Token()))
			servers[i].Port = servers[0].Port // servers of a cluster share the apiserver's port
		}
		servers[i].Start()
	}
	s := servers[0]
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")
	s.KubectlIn(t, busyboxPod("kept", "Always", "trap 'exit 0' TERM; sleep 3600 & wait", "", ""), "apply", "-f", "-")
	waitRunning(t, client, "kept")

	servers[1].Stop()
	s.Stop()
	cleanUpRuntime(t, s.Dir)
	cleanUpNetwork(t, s.wrap)
	s.launch() // no quorum: it does not get ready
	eventually(t, 2*time.Minute, func() string {
		if len(runningContainers(t, s.Dir, "main")) != 1 {
			return "without a quorum, the server's node does not run the pod again"
		}
		return ""
	})
	if problem := s.readyProblem(); problem == "" {
		t.Fatal("the server is ready without a quorum")
	}

	servers[1].Start()
	if problem := s.waitReady(); problem != "" {
		t.Fatal(problem)
	}
	waitNodeReady(t, client, "e2e-server")
	eventually(t, time.Minute, func() string {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "kept", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return currentStatus(t, s.Dir, p, 1) // the reboot killed its container
	})
}
