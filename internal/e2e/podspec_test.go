package e2e

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
	"orch/internal/kubelet/images"
	"orch/internal/network"
)

// grpcHealthRef is the image of the gRPC health server the grpc probe
// test builds (internal/e2e/testdata/grpchealth) and imports.
const grpcHealthRef = "orch.test/grpchealth:1"

// TestPodSpec runs pod spec features with real containers on the server's
// own agent, each container reporting what it sees (in its termination
// message, or through kubectl): the security context, the host's network,
// a hostPort, hostname and subdomain, resources as cgroup limits, a
// hostPath PersistentVolume through its claim, a configMap volume
// following its ConfigMap, tcpSocket and grpc probes, and kubectl attach.
func TestPodSpec(t *testing.T) {
	// The gRPC health server is built while the server starts.
	built := make(chan testProgram, 1)
	binDir := t.TempDir()
	go func() { built <- buildTestProgram(binDir, "grpchealth") }()
	s := StartServerWithAgent(t)
	client := s.client(t)
	node := waitNodeReady(t, client, "e2e-server")
	grpcImageErr := writeProgramImage(<-built, grpcHealthRef, filepath.Join(s.Dir, "agent", "images", "grpchealth.tar"))
	t.Run("securityContext", func(t *testing.T) { testSecurityContext(t, s, client) })
	t.Run("hostNetwork", func(t *testing.T) { testHostNetwork(t, s, client, node) })
	t.Run("hostPort", func(t *testing.T) { testHostPort(t, s, client, node) })
	t.Run("hostnameSubdomain", func(t *testing.T) { testHostnameSubdomain(t, s, client) })
	t.Run("cgroupLimits", func(t *testing.T) { testCgroupLimits(t, s, client) })
	t.Run("pvcVolume", func(t *testing.T) { testPVCVolume(t, s, client) })
	t.Run("configMapUpdate", func(t *testing.T) { testConfigMapUpdate(t, s, client) })
	t.Run("tcpAndGRPCProbes", func(t *testing.T) { testTCPAndGRPCProbes(t, s, client, grpcImageErr) })
	t.Run("attach", func(t *testing.T) { testAttach(t, s, client) })
}

// containerNamed is the status of the container name of p (regular ones).
func containerNamed(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

// waitDone waits until pod name completed (Succeeded or Failed).
func waitDone(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	return waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			var states []string
			for _, cs := range p.Status.ContainerStatuses {
				states = append(states, fmt.Sprintf("%s: %+v", cs.Name, cs.State))
			}
			return fmt.Sprintf("phase %s, containers %s", p.Status.Phase, strings.Join(states, "; "))
		}
		return ""
	})
}

// waitRunning waits until every container of pod name runs.
func waitRunning(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	return waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return "phase " + string(p.Status.Phase)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return fmt.Sprintf("container %s %+v", cs.Name, cs.State)
			}
		}
		return ""
	})
}

// reported parses the key=value lines a container wrote to its
// termination message; it fails unless the container exited 0.
func reported(t *testing.T, p *corev1.Pod, container string) map[string]string {
	t.Helper()
	term := containerNamed(p, container).State.Terminated
	if term == nil {
		t.Fatalf("container %s of pod %s is not terminated: %+v", container, p.Name, containerNamed(p, container).State)
	}
	if term.ExitCode != 0 {
		t.Errorf("container %s of pod %s exited %d (%s): %s", container, p.Name, term.ExitCode, term.Reason, term.Message)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(term.Message), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// expectReported compares what a container reported with want.
func expectReported(t *testing.T, container string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("in container %s %s = %q, want %q", container, k, got[k], v)
		}
	}
}

// podEvents are the "reason: message" lines of the events of pod name.
func podEvents(t *testing.T, s *Server, name string) string {
	t.Helper()
	return s.Kubectl(t, "get", "events", "--field-selector", "involvedObject.name="+name,
		"-o", `jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}`)
}

// nodeIP is the node's InternalIP.
func nodeIP(t *testing.T, node *corev1.Node) string {
	t.Helper()
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("node %s has no InternalIP: %+v", node.Name, node.Status.Addresses)
	return ""
}

// reportScript is what each container of the security context pod
// reports: its ids, capabilities, no_new_privs, whether it can write to
// / and to an emptyDir, and whether it sees the host's device $DEV.
const reportScript = `{
echo "uid=$(id -u)"; echo "gid=$(id -g)"
echo "capeff=$(grep '^CapEff:' /proc/self/status | cut -f2)"
echo "nnp=$(grep '^NoNewPrivs:' /proc/self/status | cut -f2)"
if touch /rootfs-probe 2>/dev/null; then echo rootwrite=ok; else echo rootwrite=fail; fi
if touch /scratch/probe-$(id -u)-$$ 2>/dev/null; then echo scratchwrite=ok; else echo scratchwrite=fail; fi
if [ -e /dev/$DEV ]; then echo hostdev=yes; else echo hostdev=no; fi
} > /dev/termination-log`

// testSecurityContext: one pod of containers with different security
// contexts, each reporting what it got, against a baseline container
// without one; and a pod with runAsNonRoot and the (root) busybox image,
// which the kubelet refuses to create, with upstream's message.
func testSecurityContext(t *testing.T, s *Server, client kubernetes.Interface) {
	dev := hostOnlyDevice(t)
	container := func(name, securityContext string) string {
		return fmt.Sprintf(`  - name: %s
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
    env: [{name: DEV, value: %s}]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    securityContext: %s
`, name, images.BusyboxRef, reportScript, dev, securityContext)
	}
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: secctx}
spec:
  restartPolicy: Never
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
` + container("base", "{}") +
		container("ids", "{runAsUser: 1234, runAsGroup: 5678, runAsNonRoot: true}") +
		container("rofs", "{readOnlyRootFilesystem: true}") +
		container("caps", "{capabilities: {add: [NET_ADMIN], drop: [NET_RAW]}}") +
		container("priv", "{privileged: true}") +
		container("nnp", "{allowPrivilegeEscalation: false}")
	s.KubectlIn(t, manifest, "apply", "-f", "-")
	s.KubectlIn(t, busyboxPod("nonroot", "Never", "id -u > /dev/termination-log", "    securityContext: {runAsNonRoot: true}\n", ""),
		"apply", "-f", "-")
	p := waitDone(t, client, "secctx")

	base := reported(t, p, "base")
	expectReported(t, "base", base, map[string]string{"uid": "0", "gid": "0", "nnp": "0", "rootwrite": "ok", "scratchwrite": "ok", "hostdev": "no"})
	baseCaps := parseCaps(t, "base", base["capeff"])
	const capNetAdmin, capNetRaw = 12, 13
	if baseCaps&(1<<capNetAdmin) != 0 || baseCaps&(1<<capNetRaw) == 0 {
		t.Errorf("the baseline container's CapEff %016x: want the runtime's default, with NET_RAW and without NET_ADMIN", baseCaps)
	}

	ids := reported(t, p, "ids")
	expectReported(t, "ids", ids, map[string]string{"uid": "1234", "gid": "5678"})
	if c := parseCaps(t, "ids", ids["capeff"]); c != 0 {
		t.Errorf("container ids (uid 1234) has CapEff %016x, want none", c)
	}

	rofs := reported(t, p, "rofs")
	expectReported(t, "rofs", rofs, map[string]string{"uid": "0", "rootwrite": "fail", "scratchwrite": "ok"})

	caps := reported(t, p, "caps")
	if got, want := parseCaps(t, "caps", caps["capeff"]), (baseCaps|1<<capNetAdmin)&^(1<<capNetRaw); got != want {
		t.Errorf("container caps (add NET_ADMIN, drop NET_RAW) has CapEff %016x, want %016x (the baseline's %016x with those changes)", got, want, baseCaps)
	}

	priv := reported(t, p, "priv")
	expectReported(t, "priv", priv, map[string]string{"hostdev": "yes", "rootwrite": "ok"})
	// A privileged container gets every capability the runtime (started
	// by orch, started by this test) has: this process's.
	if got, want := parseCaps(t, "priv", priv["capeff"]), ownCaps(t); got != want {
		t.Errorf("the privileged container has CapEff %016x, want all of the host's %016x", got, want)
	}

	nnp := reported(t, p, "nnp")
	expectReported(t, "nnp", nnp, map[string]string{"nnp": "1", "uid": "0"})
	if got := parseCaps(t, "nnp", nnp["capeff"]); got != baseCaps {
		t.Errorf("container nnp has CapEff %016x, want the baseline's %016x", got, baseCaps)
	}
	if t.Failed() {
		for _, cs := range p.Status.ContainerStatuses {
			t.Logf("container %s reported:\n%s", cs.Name, cs.State.Terminated.Message)
		}
	}

	// runAsNonRoot without runAsUser and an image that runs as root.
	np := waitPod(t, client, "nonroot", time.Minute, func(p *corev1.Pod) string {
		if w := mainStatus(p).State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" {
			return fmt.Sprintf("container main %+v", mainStatus(p).State)
		}
		return ""
	})
	// Upstream's verifyRunAsNonRoot (pkg/kubelet/kuberuntime/security_context_others.go), format.Pod.
	want := fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: main)",
		fmt.Sprintf("%s_%s(%s)", np.Name, np.Namespace, np.UID))
	if got := mainStatus(np).State.Waiting.Message; got != want {
		t.Errorf("waiting message of the runAsNonRoot container:\n got %q\nwant %q", got, want)
	}
	if events := podEvents(t, s, "nonroot"); !strings.Contains(events, "Failed: Error: "+want) {
		t.Errorf("no event %q in:\n%s", "Failed: Error: "+want, events)
	}
	if np.Status.Phase != corev1.PodPending {
		t.Errorf("the runAsNonRoot pod is %s, want Pending", np.Status.Phase)
	}
	s.Kubectl(t, "delete", "pod", "secctx", "nonroot", "--wait=false")
}

// hostOnlyDevice is a device node of the host's /dev that a container
// without privileges does not get (the runtime gives it only null, zero,
// full, random, urandom, tty, console and ptmx, and pts, shm, mqueue).
func hostOnlyDevice(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/dev")
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]bool{"null": true, "zero": true, "full": true, "random": true, "urandom": true, "tty": true,
		"console": true, "ptmx": true, "core": true, "fuse": true}
	for _, e := range entries {
		if e.Type()&os.ModeDevice != 0 && !defaults[e.Name()] {
			return e.Name()
		}
	}
	t.Fatal("the host's /dev has no device node beyond the ones every container gets")
	return ""
}

func parseCaps(t *testing.T, container, hex string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		t.Errorf("container %s reported CapEff %q: %v", container, hex, err)
	}
	return v
}

// ownCaps is this process's effective capability set.
func ownCaps(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return parseCaps(t, "(the test)", strings.TrimSpace(v))
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return 0
}

// testHostNetwork: a pod on the host's network has the node's IP, sees
// the host's interfaces (the pod bridge among them) and has the node's
// hostname and the host-network /etc/hosts.
func testHostNetwork(t *testing.T, s *Server, client kubernetes.Interface, node *corev1.Node) {
	script := `{
echo "hostname=$(hostname)"
echo "ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -v '^veth' | sort | tr '\n' ' ')"
echo "hostsheader=$(head -n 1 /etc/hosts)"
} > /dev/termination-log`
	s.KubectlIn(t, busyboxPod("hostnet", "Never", script, "", "  hostNetwork: true\n"), "apply", "-f", "-")
	p := waitDone(t, client, "hostnet")
	got := reported(t, p, "main")
	ip := nodeIP(t, node)
	if p.Status.PodIP != ip || len(p.Status.PodIPs) == 0 || p.Status.PodIPs[0].IP != ip || p.Status.HostIP != ip {
		t.Errorf("podIP %q podIPs %v hostIP %q, want the node's IP %s", p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, ip)
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	expectReported(t, "main", got, map[string]string{"hostname": hostname, "hostsheader": "# Kubernetes-managed hosts file (host network)."})
	inPod := map[string]bool{}
	for _, name := range strings.Fields(got["ifaces"]) {
		inPod[name] = true
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var host []string
	for _, i := range ifaces {
		if !strings.HasPrefix(i.Name, "veth") { // pods' veths come and go
			host = append(host, i.Name)
		}
	}
	for _, name := range append(host, network.DefaultBridgeName) {
		if !inPod[name] {
			t.Errorf("the host-network pod does not see interface %s; it sees %q (the host has %v)", name, got["ifaces"], host)
		}
	}
	s.Kubectl(t, "delete", "pod", "hostnet", "--wait=false")
}

// testHostPort: a busybox httpd on containerPort 80 with hostPort 18080
// answers on the node's IP, port 18080, from the host (the portmap
// plugin); once the pod is deleted the port is closed again.
func testHostPort(t *testing.T, s *Server, client kubernetes.Interface, node *corev1.Node) {
	const hostPort = 18080
	url := fmt.Sprintf("http://%s/index.html", net.JoinHostPort(nodeIP(t, node), strconv.Itoa(hostPort)))
	hc := &http.Client{Timeout: 2 * time.Second}
	get := func() (string, error) {
		resp, err := hc.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body), err
	}
	if out, err := get(); err == nil {
		t.Fatalf("something answers on %s before the pod runs: %s", url, out)
	}
	s.KubectlIn(t, busyboxPod("hostport", "Always", "mkdir -p /www; echo hostport-ok > /www/index.html; exec httpd -f -p 80 -h /www",
		"    ports: [{containerPort: 80, hostPort: 18080}]\n", "  terminationGracePeriodSeconds: 1\n"), "apply", "-f", "-")
	waitRunning(t, client, "hostport")
	eventually(t, 30*time.Second, func() string {
		out, err := get()
		if err != nil || out != "200 hostport-ok\n" {
			return fmt.Sprintf("GET %s: %q %v", url, out, err)
		}
		return ""
	})
	s.Kubectl(t, "delete", "pod", "hostport", "--timeout=60s")
	eventually(t, 30*time.Second, func() string {
		if out, err := get(); err == nil {
			return fmt.Sprintf("GET %s after the pod was deleted: %q", url, out)
		}
		return ""
	})
}

// testHostnameSubdomain: a pod with hostname and subdomain has the
// hostname, and its /etc/hosts names it hostname.subdomain.ns.svc.
// cluster.local as upstream's; with setHostnameAsFQDN the hostname is
// the FQDN.
func testHostnameSubdomain(t *testing.T, s *Server, client kubernetes.Interface) {
	script := `{ echo "hostname=$(hostname)"; echo "hosts=$(grep -v '^#' /etc/hosts | grep web-0)"; } > /dev/termination-log`
	s.KubectlIn(t, busyboxPod("named", "Never", script, "", "  hostname: web-0\n  subdomain: svc1\n"), "apply", "-f", "-")
	s.KubectlIn(t, busyboxPod("named-fqdn", "Never", script, "", "  hostname: web-0\n  subdomain: svc1\n  setHostnameAsFQDN: true\n"), "apply", "-f", "-")
	const fqdn = "web-0.svc1.default.svc.cluster.local"
	for name, hostname := range map[string]string{"named": "web-0", "named-fqdn": fqdn} {
		p := waitDone(t, client, name)
		got := reported(t, p, "main")
		expectReported(t, name, got, map[string]string{"hostname": hostname, "hosts": p.Status.PodIP + "\t" + fqdn + "\tweb-0"})
	}
	s.Kubectl(t, "delete", "pod", "named", "named-fqdn", "--wait=false")
}

// testCgroupLimits: cpu and memory limits become the container's cgroup
// limits (CFS quota 50000 per 100000 for cpu: 500m, the memory limit in
// bytes) and its cpu request its cpu shares (cgroup v1) or cpu.weight
// (cgroup v2, converted from the shares), as the container sees them.
func testCgroupLimits(t *testing.T, s *Server, client kubernetes.Interface) {
	script := `{ for f in cpu.max cpu.weight memory.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us cpu/cpu.shares memory/memory.limit_in_bytes; do
  if [ -f /sys/fs/cgroup/$f ]; then echo "$f=$(cat /sys/fs/cgroup/$f)"; fi
done; } > /dev/termination-log`
	s.KubectlIn(t, busyboxPod("limits", "Never", script,
		"    resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 500m, memory: 64Mi}}\n", ""), "apply", "-f", "-")
	p := waitDone(t, client, "limits")
	got := reported(t, p, "main")
	const shares = 250 * 1024 / 1000 // 256, upstream's MilliCPUToShares
	switch {
	case got["cpu.max"] != "":
		expectReported(t, "main", got, map[string]string{"cpu.max": "50000 100000", "memory.max": strconv.Itoa(64 << 20)})
		// runc converts the shares the kubelet sends: linearly (the
		// KEP's formula, runc < 1.3.2) or on a log scale (later runc).
		linear := 1 + ((shares-2)*9999)/262142
		l := math.Log2(shares)
		logScale := int(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
		if w := got["cpu.weight"]; w != strconv.Itoa(linear) && w != strconv.Itoa(logScale) {
			t.Errorf("cpu.weight = %q, want %d (or %d) for cpu shares %d", w, linear, logScale, shares)
		}
	case got["cpu/cpu.cfs_quota_us"] != "":
		expectReported(t, "main", got, map[string]string{"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000",
			"cpu/cpu.shares": strconv.Itoa(shares), "memory/memory.limit_in_bytes": strconv.Itoa(64 << 20)})
	default:
		t.Errorf("the container sees neither cgroup v2 nor v1 cpu files: %v", got)
	}
	if t.Failed() {
		t.Logf("reported: %v", got)
	}
	s.Kubectl(t, "delete", "pod", "limits", "--wait=false")
}

// testPVCVolume: a hostPath PersistentVolume and a claim the binder binds
// to it; a pod using the claim reads what the host put there, and what it
// writes lands in the host path.
func testPVCVolume(t *testing.T, s *Server, client kubernetes.Interface) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seed"), []byte("from-the-host"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-hostpath}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: %s, type: Directory}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
`, dir), "apply", "-f", "-")
	s.Kubectl(t, "wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s")
	if v := s.Kubectl(t, "get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}"); v != "e2e-hostpath" {
		t.Errorf("claim data is bound to %q, want e2e-hostpath", v)
	}
	s.KubectlIn(t, busyboxPod("claimer", "Never", `echo "seed=$(cat /data/seed)" > /dev/termination-log; echo written-by-the-pod > /data/from-pod`,
		"    volumeMounts: [{name: data, mountPath: /data}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]\n", ""),
		"apply", "-f", "-")
	p := waitDone(t, client, "claimer")
	expectReported(t, "main", reported(t, p, "main"), map[string]string{"seed": "from-the-host"})
	if data, err := os.ReadFile(filepath.Join(dir, "from-pod")); err != nil || string(data) != "written-by-the-pod\n" {
		t.Errorf("the file the pod wrote to its claim, in the host path: %q %v", data, err)
	}

	// The claim is in use while its pod exists, finished or not: deleting
	// it leaves it Terminating until the pod is gone (upstream's protection
	// finalizers). An unused claim deleted after it goes at once; the
	// pvc-protection controller takes claims in order, so by then it has
	// decided about data too.
	s.KubectlIn(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: spare}\nspec: {storageClassName: \"\", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}\n",
		"apply", "-f", "-")
	s.Kubectl(t, "delete", "pvc", "data", "--wait=false")
	s.Kubectl(t, "delete", "pvc", "spare", "--timeout=60s")
	if f := s.Kubectl(t, "get", "pvc", "data", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(f, "kubernetes.io/pvc-protection") {
		t.Errorf("the claim in use after kubectl delete has finalizers %q, want it kept by kubernetes.io/pvc-protection", f)
	}
	s.Kubectl(t, "delete", "pod", "claimer", "--grace-period=0", "--force")
	s.Kubectl(t, "wait", "--for=delete", "pvc/data", "--timeout=60s")
	// Its volume, Retained, is Released and may then be deleted (the
	// pv-protection finalizer held it only while it was Bound).
	s.Kubectl(t, "wait", "--for=jsonpath={.status.phase}=Released", "pv/e2e-hostpath", "--timeout=60s")
	s.Kubectl(t, "delete", "pv", "e2e-hostpath", "--timeout=60s")
}

// testConfigMapUpdate: when a ConfigMap changes, the file of a configMap
// volume in a running container follows (upstream: within the kubelet's
// sync period plus the cache's TTL, about a minute), an env var from it
// does not.
func testConfigMapUpdate(t *testing.T, s *Server, client kubernetes.Interface) {
	s.Kubectl(t, "create", "configmap", "live", "--from-literal=value=v1")
	s.KubectlIn(t, busyboxPod("live", "Always", "exec sleep 3600",
		`    env: [{name: VALUE, valueFrom: {configMapKeyRef: {name: live, key: value}}}]
    volumeMounts: [{name: cfg, mountPath: /cfg}]
  volumes: [{name: cfg, configMap: {name: live}}]
`, "  terminationGracePeriodSeconds: 1\n"), "apply", "-f", "-")
	waitRunning(t, client, "live")
	read := func() (file, env string) {
		out := s.Kubectl(t, "exec", "live", "--", "sh", "-c", `echo "$(cat /cfg/value) $VALUE"`)
		file, env, _ = strings.Cut(strings.TrimSpace(out), " ")
		return file, env
	}
	if file, env := read(); file != "v1" || env != "v1" {
		t.Fatalf("before the update: file %q, env %q, want v1 and v1", file, env)
	}
	s.Kubectl(t, "patch", "configmap", "live", "--type=merge", "-p", `{"data":{"value":"v2"}}`)
	start := time.Now()
	eventually(t, 90*time.Second, func() string {
		if file, _ := read(); file != "v2" {
			return fmt.Sprintf("the file in the container still says %q", file)
		}
		return ""
	})
	t.Logf("the configMap volume followed the update in %v", time.Since(start).Round(100*time.Millisecond))
	if file, env := read(); file != "v2" || env != "v1" {
		t.Errorf("after the update: file %q, env %q, want v2 and (unchanged) v1", file, env)
	}
	s.Kubectl(t, "delete", "pod", "live", "--wait=false")
}

// testTCPAndGRPCProbes: a tcpSocket readiness probe passes while httpd
// listens and fails, with upstream's message, once nothing does; grpc
// readiness probes against a real gRPC health server pass for a SERVING
// service and fail for a NOT_SERVING one.
func testTCPAndGRPCProbes(t *testing.T, s *Server, client kubernetes.Interface, grpcImageErr error) {
	ready := func(p *corev1.Pod, container string) bool { return containerNamed(p, container).Ready }
	s.KubectlIn(t, busyboxPod("tcpprobe", "Always", "mkdir -p /www; echo ok > /www/index.html; httpd -p 8080 -h /www; exec sleep 3600",
		"    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}\n", "  terminationGracePeriodSeconds: 1\n"), "apply", "-f", "-")
	p := waitPod(t, client, "tcpprobe", 2*time.Minute, func(p *corev1.Pod) string {
		if !ready(p, "main") {
			return fmt.Sprintf("not ready: %+v", mainStatus(p))
		}
		return ""
	})
	s.Kubectl(t, "exec", "tcpprobe", "--", "killall", "httpd")
	waitPod(t, client, "tcpprobe", time.Minute, func(p *corev1.Pod) string {
		if ready(p, "main") {
			return "still ready after httpd was killed"
		}
		return ""
	})
	want := fmt.Sprintf("Unhealthy: Readiness probe failed: dial tcp %s: connect: connection refused", net.JoinHostPort(p.Status.PodIP, "8080"))
	eventually(t, 30*time.Second, func() string {
		if events := podEvents(t, s, "tcpprobe"); !strings.Contains(events, want) {
			return fmt.Sprintf("no event %q in:\n%s", want, events)
		}
		return ""
	})
	s.Kubectl(t, "delete", "pod", "tcpprobe", "--wait=false")

	if grpcImageErr != nil {
		t.Fatalf("the gRPC health server image: %v", grpcImageErr)
	}
	eventually(t, time.Minute, func() string {
		if !strings.Contains(ctr(t, s.Dir, "images", "ls", "-q"), grpcHealthRef) {
			return "the agent has not imported " + grpcHealthRef + " yet"
		}
		return ""
	})
	s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: grpcprobe}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: serving
    image: %[1]s
    imagePullPolicy: Never
    args: ["9090"]
    readinessProbe: {grpc: {port: 9090}, periodSeconds: 1}
  - name: sick
    image: %[1]s
    imagePullPolicy: Never
    args: ["9091"]
    readinessProbe: {grpc: {port: 9091, service: sick}, periodSeconds: 1}
`, grpcHealthRef), "apply", "-f", "-")
	const sickEvent = `Unhealthy: Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`
	waitPod(t, client, "grpcprobe", 2*time.Minute, func(p *corev1.Pod) string {
		if !ready(p, "serving") || containerNamed(p, "sick").State.Running == nil {
			return fmt.Sprintf("serving %+v, sick %+v", containerNamed(p, "serving"), containerNamed(p, "sick"))
		}
		if events := podEvents(t, s, "grpcprobe"); !strings.Contains(events, sickEvent) {
			return fmt.Sprintf("no event %q in:\n%s", sickEvent, events)
		}
		return ""
	})
	if p := getPod(t, client, "grpcprobe"); ready(p, "sick") {
		t.Errorf("container sick (its grpc probe's service is NOT_SERVING) is ready")
	}
	s.Kubectl(t, "delete", "pod", "grpcprobe", "--wait=false")
}

// testAttach: kubectl attach -i to a container running sh with stdin
// gives it the input and returns its output; kubectl attach -it (in a
// terminal that script(1) gives it) to one with a tty too.
func testAttach(t *testing.T, s *Server, client kubernetes.Interface) {
	pod := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sh], stdin: true%s}
`, name, images.BusyboxRef, extra)
	}
	// stdinOnce: when kubectl's stdin ends, the container's does (sh
	// exits) and the output still comes; without it the runtime ends the
	// session at once, output not yet written lost (containerd's attach).
	s.KubectlIn(t, pod("attach-i", ", stdinOnce: true"), "apply", "-f", "-")
	s.KubectlIn(t, pod("attach-t", ", tty: true"), "apply", "-f", "-")
	waitRunning(t, client, "attach-i")
	r := s.Run(t, Cmd{Args: []string{"attach", "-i", "attach-i", "-c", "main"}, Stdin: "echo attached-$((6*7))\nexit 3\n"})
	if !strings.Contains(r.Stdout, "attached-42\n") {
		t.Errorf("kubectl attach -i: exit %d, stdout %q, stderr %q; want attached-42", r.Code, r.Stdout, r.Stderr)
	}
	p := waitDone(t, client, "attach-i")
	if term := mainStatus(p).State.Terminated; term == nil || term.ExitCode != 3 {
		t.Errorf("after exit 3 through attach the container is %+v, want terminated with exit code 3", mainStatus(p).State)
	}

	waitRunning(t, client, "attach-t")
	cmd := exec.Command("script", "-qec", orchBin+" kubectl attach -it attach-t -c main", "/dev/null")
	cmd.Env = s.kubectlEnv(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed with kubectl
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &envtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	eventually(t, 30*time.Second, func() string {
		if !strings.Contains(out.String(), "If you don't see a command prompt") {
			return "kubectl attach -it has not attached: " + out.String()
		}
		return ""
	})
	time.Sleep(time.Second) // the hint comes just before the stream opens
	if _, err := io.WriteString(stdin, "tty; echo tty-$((6*7)); exit 5\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Errorf("kubectl attach -it did not end within 30 s after the shell's exit; output:\n%s", out.String())
	}
	if o := out.String(); !strings.Contains(o, "/dev/pts/") || !strings.Contains(o, "tty-42") {
		t.Errorf("kubectl attach -it output %q, want the tty's name and tty-42", o)
	}
	p = waitDone(t, client, "attach-t")
	if term := mainStatus(p).State.Terminated; term == nil || term.ExitCode != 5 {
		t.Errorf("after exit 5 through attach -it the container is %+v, want terminated with exit code 5", mainStatus(p).State)
	}
	s.Kubectl(t, "delete", "pod", "attach-i", "attach-t", "--wait=false")
}
