package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/images"
)

// TestPodLifecycle runs the Pods bullets of the agent issue with real
// containers on the server's own agent: environment and volumes as the
// container sees them, probes failing and recovering, a crash loop
// backing off, OOMKilled under a memory limit, and graceful termination
// with a preStop hook, a sidecar beside its container, and a sandbox that
// died replaced.
func TestPodLifecycle(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")
	t.Run("envAndVolumes", func(t *testing.T) { testEnvAndVolumes(t, s, client) })
	t.Run("probes", func(t *testing.T) { testProbes(t, s, client) })
	t.Run("crashLoop", func(t *testing.T) { testCrashLoop(t, s, client) })
	t.Run("oomKilled", func(t *testing.T) { testOOMKilled(t, s, client) })
	t.Run("gracefulTermination", func(t *testing.T) { testGracefulTermination(t, s, client) })
	t.Run("sidecar", func(t *testing.T) { testSidecar(t, s, client) })
	t.Run("deadSandbox", func(t *testing.T) { testDeadSandbox(t, s, client) })
}

// busyboxPod is a pod of one busybox container named main running script.
func busyboxPod(name, restartPolicy, script, extraContainer, extraSpec string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  restartPolicy: %s
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
%s`, name, name, restartPolicy, extraSpec, images.BusyboxRef, script, extraContainer)
}

func getPod(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPod polls pod name of namespace default until cond says "" (or
// fails after timeout).
func waitPod(t *testing.T, client kubernetes.Interface, name string, timeout time.Duration, cond func(p *corev1.Pod) string) *corev1.Pod {
	t.Helper()
	return waitPodNS(t, client, "default", name, timeout, cond)
}

// waitPodNS is waitPod in namespace ns.
func waitPodNS(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(p *corev1.Pod) string) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	eventually(t, timeout, func() string {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		last = p
		return cond(p)
	})
	return last
}

func mainStatus(p *corev1.Pod) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "main" {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// testEnvAndVolumes: the container writes what it sees into its
// termination message, which comes back in its terminated state.
func testEnvAndVolumes(t *testing.T, s *Server, client kubernetes.Interface) {
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "marker"), []byte("from-the-host"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Kubectl(t, "create", "configmap", "cfg", "--from-literal=color=blue", "--from-literal=greeting=hello-cm")
	s.Kubectl(t, "create", "secret", "generic", "sec", "--from-literal=password=s3cret")
	script := `{
echo "PLAIN=$PLAIN"; echo "COLOR=$COLOR"; echo "PASSWORD=$PASSWORD"; echo "MY_NODE=$MY_NODE"
echo "MY_IP=$MY_IP"; echo "MEM_LIMIT=$MEM_LIMIT"; echo "CM_greeting=$CM_greeting"
echo "cm=$(cat /cm/greeting)"; echo "sec=$(cat /sec/password)"; echo "labels=$(cat /podinfo/labels)"
echo "host=$(cat /host/marker)"; echo "token=$(test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo yes)"
echo "ns=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)"
echo "cafile=$(grep -c 'BEGIN CERTIFICATE' /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"
echo "memfs=$(grep ' /mem ' /proc/mounts | cut -d' ' -f3)"
echo scratch-ok > /scratch/f; echo "scratch=$(cat /scratch/f)"
echo "hosts=$(grep -c envvol /etc/hosts)"; echo "search=$(grep '^search' /etc/resolv.conf)"
echo "workdir=$(pwd)"; echo "KUBERNETES_SERVICE_HOST=$KUBERNETES_SERVICE_HOST"
} > /dev/termination-log`
	extra := fmt.Sprintf(`    workingDir: /scratch
    resources: {limits: {memory: 64Mi, cpu: 500m}}
    env:
    - {name: PLAIN, value: plain-value}
    - {name: COLOR, valueFrom: {configMapKeyRef: {name: cfg, key: color}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: sec, key: password}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    envFrom: [{prefix: CM_, configMapRef: {name: cfg}}]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: cm, mountPath: /cm}
    - {name: sec, mountPath: /sec}
    - {name: labels, mountPath: /podinfo}
    - {name: host, mountPath: /host}
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory}}
  - {name: cm, configMap: {name: cfg}}
  - {name: sec, secret: {secretName: sec}}
  - {name: labels, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
  - {name: host, hostPath: {path: %s, type: Directory}}
`, hostDir)
	s.KubectlIn(t, busyboxPod("envvol", "Never", script, extra, ""), "apply", "-f", "-")
	p := waitPod(t, client, "envvol", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Sprintf("phase %s, status %+v", p.Status.Phase, mainStatus(p).State)
		}
		return ""
	})
	term := mainStatus(p).State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Fatalf("terminated state %+v", term)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(term.Message), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"PLAIN": "plain-value", "COLOR": "blue", "PASSWORD": "s3cret", "MY_NODE": "e2e-server", "MY_IP": p.Status.PodIP,
		"MEM_LIMIT": "64", "CM_greeting": "hello-cm", "cm": "hello-cm", "sec": "s3cret", "labels": `app="envvol"`,
		"host": "from-the-host", "token": "yes", "ns": "default", "cafile": "1", "memfs": "tmpfs", "scratch": "scratch-ok",
		"hosts": "1", "search": "search default.svc.cluster.local svc.cluster.local cluster.local", "workdir": "/scratch", "KUBERNETES_SERVICE_HOST": "10.43.0.1",
	}
	for k, v := range want {
		if got[k] != v && !(k == "search" && strings.HasPrefix(got[k], v)) {
			t.Errorf("in the container %s = %q, want %q", k, got[k], v)
		}
	}
	if t.Failed() {
		t.Logf("termination message:\n%s", term.Message)
	}
}

// testProbes: readiness fails at first, passes, fails and recovers; a
// failing liveness probe restarts the container, which becomes ready again.
// An emptyDir remembers across the restart that the first run happened.
func testProbes(t *testing.T, s *Server, client kubernetes.Interface) {
	script := `set -x; mkdir -p /tmp /www; touch /tmp/healthy; echo ok > /www/index.html; httpd -p 8080 -h /www
sleep 2; touch /tmp/ready
if [ ! -f /state/once ]; then touch /state/once; sleep 4; rm /tmp/ready; sleep 4; touch /tmp/ready; sleep 4; rm /tmp/healthy; fi
sleep 3600`
	extra := `    ports: [{name: http, containerPort: 8080}]
    startupProbe: {httpGet: {path: /index.html, port: http}, periodSeconds: 1, failureThreshold: 30}
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}
    livenessProbe: {exec: {command: [cat, /tmp/healthy]}, periodSeconds: 1, failureThreshold: 2}
    volumeMounts: [{name: state, mountPath: /state}]
  volumes: [{name: state, emptyDir: {}}]
`
	s.KubectlIn(t, busyboxPod("probed", "Always", script, extra, "  terminationGracePeriodSeconds: 2\n"), "apply", "-f", "-")
	ready := func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	steps := []struct {
		what string
		ok   func(p *corev1.Pod) bool
	}{
		{"running, started, not ready yet", func(p *corev1.Pod) bool {
			cs := mainStatus(p)
			return cs.State.Running != nil && !ready(p)
		}},
		{"ready", func(p *corev1.Pod) bool { return ready(p) && mainStatus(p).RestartCount == 0 }},
		{"readiness failing", func(p *corev1.Pod) bool { return !ready(p) && mainStatus(p).RestartCount == 0 }},
		{"readiness recovered", func(p *corev1.Pod) bool { return ready(p) && mainStatus(p).RestartCount == 0 }},
		{"restarted by liveness", func(p *corev1.Pod) bool { return mainStatus(p).RestartCount == 1 }},
		{"ready after the restart", func(p *corev1.Pod) bool { return ready(p) && mainStatus(p).RestartCount == 1 }},
	}
	defer func() {
		if t.Failed() {
			t.Logf("events of pod probed:\n%s", s.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name=probed",
				"-o", "custom-columns=FIRST:.firstTimestamp,LAST:.lastTimestamp,COUNT:.count,REASON:.reason,MESSAGE:.message"))
			logs, _ := filepath.Glob(filepath.Join(s.Dir, "agent", "pod-logs", "default_probed_*", "main", "*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, data)
			}
		}
	}()
	for _, step := range steps {
		waitPod(t, client, "probed", 90*time.Second, func(p *corev1.Pod) string {
			if step.ok(p) {
				return ""
			}
			return fmt.Sprintf("not %s: ready %v, container %+v", step.what, ready(p), mainStatus(p))
		})
	}
	if cs := mainStatus(getPod(t, client, "probed")); cs.Started == nil || !*cs.Started {
		t.Errorf("started = %v after the startup probe passed", cs.Started)
	}
	events := s.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name=probed", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	for _, want := range []string{"Unhealthy: Readiness probe failed:", "Unhealthy: Liveness probe failed:", "Killing: Container main failed liveness probe, will be restarted"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q in:\n%s", want, events)
		}
	}
	s.Kubectl(t, "delete", "pod", "probed", "--wait=false")
}

// testCrashLoop: a container that keeps failing is restarted with back-off.
func testCrashLoop(t *testing.T, s *Server, client kubernetes.Interface) {
	s.KubectlIn(t, busyboxPod("crasher", "Always", "echo crashing; exit 3", "", ""), "apply", "-f", "-")
	p := waitPod(t, client, "crasher", 2*time.Minute, func(p *corev1.Pod) string {
		cs := mainStatus(p)
		if cs.RestartCount < 1 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
			return fmt.Sprintf("container %+v", cs)
		}
		return ""
	})
	cs := mainStatus(p)
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("lastState = %+v, want terminated with exit code 3, reason Error", cs.LastTerminationState)
	}
	if !strings.Contains(cs.State.Waiting.Message, "back-off") {
		t.Errorf("waiting message %q does not mention the back-off", cs.State.Waiting.Message)
	}
	events := s.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name=crasher,reason=BackOff", "-o", "name")
	if strings.TrimSpace(events) == "" {
		t.Error("no BackOff event")
	}
	s.Kubectl(t, "delete", "pod", "crasher", "--wait=false")
}

// testOOMKilled: a container that outgrows its memory limit is killed by
// the kernel and says so.
func testOOMKilled(t *testing.T, s *Server, client kubernetes.Interface) {
	extra := "    resources: {limits: {memory: 16Mi}}\n"
	s.KubectlIn(t, busyboxPod("hog", "Never", "tail /dev/zero", extra, ""), "apply", "-f", "-")
	p := waitPod(t, client, "hog", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodFailed {
			return fmt.Sprintf("phase %s, container %+v", p.Status.Phase, mainStatus(p).State)
		}
		return ""
	})
	term := mainStatus(p).State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("terminated = %+v, want reason OOMKilled and exit code 137", term)
	}
}

// testGracefulTermination: a container that ignores SIGTERM is killed
// when its grace period ends, not before, after its preStop hook ran.
func testGracefulTermination(t *testing.T, s *Server, client kubernetes.Interface) {
	hostDir := t.TempDir()
	extra := fmt.Sprintf(`    lifecycle:
      preStop: {exec: {command: [sh, -c, "date +%%s > /host/prestop"]}}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes: [{name: host, hostPath: {path: %s}}]
`, hostDir)
	s.KubectlIn(t, busyboxPod("stubborn", "Always", `trap "" TERM; while true; do sleep 1; done`, extra,
		"  terminationGracePeriodSeconds: 4\n"), "apply", "-f", "-")
	waitPod(t, client, "stubborn", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning {
			return "phase " + string(p.Status.Phase)
		}
		return ""
	})
	start := time.Now()
	s.Kubectl(t, "delete", "pod", "stubborn", "--timeout=60s")
	took := time.Since(start)
	// The grace period is behaviour, not speed: the container must get it.
	if took < 4*time.Second {
		t.Errorf("the pod was gone %v after delete, before its 4 s grace period ended", took)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "prestop")); err != nil {
		t.Errorf("the preStop hook did not run: %v", err)
	}
	t.Logf("a container ignoring SIGTERM with a 4 s grace period was deleted in %v", took.Round(100*time.Millisecond))
}

// testSidecar: a sidecar (an init container with restartPolicy Always)
// starts after the init container before it, runs beside the regular
// container, and is stopped once that completed, the pod Succeeded.
func testSidecar(t *testing.T, s *Server, client kubernetes.Interface) {
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  volumes: [{name: shared, emptyDir: {}}]
  initContainers:
  - {name: setup, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "echo set > /shared/setup"], volumeMounts: [{name: shared, mountPath: /shared}]}
  - name: helper
    image: %[1]s
    imagePullPolicy: Never
    restartPolicy: Always
    command: [sh, -c, "cat /shared/setup > /shared/helper; echo up >> /shared/helper; exec sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - {name: main, image: %[1]s, imagePullPolicy: Never, command: [sh, -c, "sleep 3; cat /shared/helper > /dev/termination-log"], volumeMounts: [{name: shared, mountPath: /shared}]}
`, images.BusyboxRef)
	s.KubectlIn(t, manifest, "apply", "-f", "-")
	sawBoth := false
	p := waitPod(t, client, "sidecar", 2*time.Minute, func(p *corev1.Pod) string {
		var helper corev1.ContainerStatus
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == "helper" {
				helper = cs
			}
		}
		if helper.State.Running != nil && helper.Ready && mainStatus(p).State.Running != nil {
			sawBoth = true
		}
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Sprintf("phase %s, helper %+v, main %+v", p.Status.Phase, helper.State, mainStatus(p).State)
		}
		return ""
	})
	if !sawBoth {
		t.Error("never saw the sidecar running and ready beside the main container")
	}
	if term := mainStatus(p).State.Terminated; term == nil || term.ExitCode != 0 || term.Message != "set\nup\n" {
		t.Errorf("main terminated %+v, want exit 0 with the message the setup and the sidecar wrote", term)
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.State.Terminated == nil {
			t.Errorf("init container %s %+v after the pod succeeded, want terminated", cs.Name, cs.State)
		}
	}
	s.Kubectl(t, "delete", "pod", "sidecar", "--wait=false")
}

// testDeadSandbox: when a pod's sandbox dies (its pause process is
// killed), the pod gets a new sandbox and its container runs again in it,
// with restartCount 1.
func testDeadSandbox(t *testing.T, s *Server, client kubernetes.Interface) {
	s.KubectlIn(t, busyboxPod("orphaned", "Always", "exec sleep 3600", "", "  terminationGracePeriodSeconds: 2\n"), "apply", "-f", "-")
	p := waitPod(t, client, "orphaned", 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning || mainStatus(p).State.Running == nil {
			return "phase " + string(p.Status.Phase)
		}
		return ""
	})
	firstIP := p.Status.PodIP
	pause := pauseOf(t, s, strings.TrimPrefix(mainStatus(p).ContainerID, "containerd://"))
	if err := syscall.Kill(pause, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the pause process %d: %v", pause, err)
	}
	p = waitPod(t, client, "orphaned", 2*time.Minute, func(p *corev1.Pod) string {
		cs := mainStatus(p)
		if cs.RestartCount != 1 || cs.State.Running == nil || p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("phase %s, main %+v", p.Status.Phase, cs)
		}
		return ""
	})
	events := s.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name=orphaned,reason=SandboxChanged", "-o", "name")
	if strings.TrimSpace(events) == "" {
		t.Error("no SandboxChanged event")
	}
	t.Logf("pod IP %s before, %s after the new sandbox", firstIP, p.Status.PodIP)
	s.Kubectl(t, "delete", "pod", "orphaned", "--wait=false")
}

// pauseOf is the PID of the pause process of the sandbox that runs the
// container with id: the process named pause in the container's network
// namespace.
func pauseOf(t *testing.T, s *Server, id string) int {
	t.Helper()
	var containerPID string
	for _, line := range strings.Split(ctr(t, s.Dir, "tasks", "ls"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			containerPID = f[1]
		}
	}
	netns, err := os.Readlink("/proc/" + containerPID + "/ns/net")
	if containerPID == "" || err != nil {
		t.Fatalf("the container %s has no task (%v)", id, err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, comm := range procs {
		name, _ := os.ReadFile(comm)
		dir := filepath.Dir(comm)
		if ns, _ := os.Readlink(dir + "/ns/net"); strings.TrimSpace(string(name)) == "pause" && ns == netns {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	t.Fatalf("no pause process in the network namespace %s of container %s", netns, id)
	return 0
}
