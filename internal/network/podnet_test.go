package network

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
)

// TestPodNetworkOnABridge runs two pods through the real containerd with
// the conflist BridgeConfList writes, and checks that each gets an address
// on the pod CIDR, that they ping and reach each other over HTTP, and that
// the host reaches them. Removing the sandboxes frees their addresses.
func TestPodNetworkOnABridge(t *testing.T) {
	containerdtest.RequireCNI(t, "iptables")
	log := containerdtest.Logger(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const podCIDR = "10.244.7.0/24"
	prefix := netip.MustParsePrefix(podCIDR)
	// Names of its own, apart from a real orch0 an orch on this machine
	// may be running at the same time.
	bridge := fmt.Sprintf("orcht%d", os.Getpid()%1000000)
	netName := "orch-test-" + bridge
	mtu := DefaultMTU()
	cfg := containerdtest.Config(t, dir)
	opts := BridgeOptions{NetworkName: netName, Bridge: bridge, MTU: mtu, IPAMDataDir: filepath.Join(dir, "ipam")}
	conf, err := BridgeConfList([]string{podCIDR}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeIfChanged(filepath.Join(cfg.CNIConfDir, DefaultConfFile), conf); err != nil {
		t.Fatal(err)
	}
	t.Logf("conflist:\n%s", conf)

	// Host state the test may create and must leave as it found it.
	createdDirs := missing("/var/lib/cni/results", "/var/lib/cni", "/run/netns")
	netnsBefore := listDir("/run/netns")
	iptablesBefore := iptablesSave(t)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", bridge).CombinedOutput(); err != nil {
			t.Errorf("ip link del %s: %v: %s", bridge, err, out)
		}
		if left := slices.DeleteFunc(listDir("/run/netns"), func(n string) bool { return slices.Contains(netnsBefore, n) }); len(left) > 0 {
			t.Errorf("network namespaces left: %q", left)
		}
		results, _ := filepath.Glob("/var/lib/cni/results/" + netName + "-*")
		if len(results) > 0 {
			t.Errorf("CNI results left: %q", results)
		}
		for _, d := range createdDirs {
			os.Remove(d) // only when empty: an orch running alongside may use it
		}
		if after := iptablesSave(t); after != iptablesBefore {
			t.Logf("iptables changed during the test (the CNI plugins' doing):\nbefore:\n%s\nafter:\n%s", iptablesBefore, after)
		}
	})
	allowForwardingOnTheBridge(t, bridge)

	sup := containerdtest.StartContainerd(t, dir, cfg, log, containerdtest.Options{MountsLeftFail: true})
	containerdtest.ImportImages(t, ctx, cfg, log)
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.UpdateRuntimeConfig(ctx, podCIDR); err != nil {
		t.Fatal(err)
	}
	st, err := rt.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	// The conditions a node's readiness depends on (others, such as
	// containerd 2.x's deprecation warning about cgroup v1, may be false).
	for _, c := range st.Status.Conditions {
		if (c.Type == runtimeapi.RuntimeReady || c.Type == runtimeapi.NetworkReady) && !c.Status {
			t.Fatalf("runtime condition %s is false: %s %s", c.Type, c.Reason, c.Message)
		}
	}

	a := runPod(t, ctx, rt, dir, "a", "mkdir -p /www && echo hello-from-a > /www/index.html && exec httpd -f -p 8080 -h /www")
	b := runPod(t, ctx, rt, dir, "b", "exec sleep 3600")
	if a.ip == b.ip {
		t.Fatalf("both pods got %s", a.ip)
	}
	for _, p := range []*pod{a, b} {
		ip, err := netip.ParseAddr(p.ip)
		if err != nil || !prefix.Contains(ip) || ip == prefix.Addr() || ip == prefix.Addr().Next() {
			t.Fatalf("pod %s got %q, want an address of %s other than the network and the gateway", p.name, p.ip, podCIDR)
		}
		t.Logf("pod %s: %s", p.name, p.ip)
	}

	gateway := prefix.Addr().Next().String()
	// Inside a pod: the runtime's loopback, eth0 with the MTU, the
	// default route via the gateway.
	a.execOK(t, ctx, "loopback", "ip addr show lo | grep -q 'inet 127.0.0.1/8'", "")
	a.execOK(t, ctx, "MTU", "cat /sys/class/net/eth0/mtu", fmt.Sprintf("%d\n", mtu))
	a.execOK(t, ctx, "default route", "ip route | grep ^default", "default via "+gateway+" dev eth0 \n")
	// Pod to gateway, pod to pod (ICMP and TCP), and the pod itself.
	b.execOK(t, ctx, "ping the gateway", "ping -c1 -W2 "+gateway, "")
	a.execOK(t, ctx, "ping pod b", "ping -c1 -W2 "+b.ip, "")
	b.eventually(t, ctx, "pod b fetches from pod a", "timeout 5 wget -qO- http://"+a.ip+":8080/", "hello-from-a\n")
	a.execOK(t, ctx, "pod a fetches from itself over loopback", "timeout 5 wget -qO- http://127.0.0.1:8080/", "hello-from-a\n")
	// Host to pod.
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get("http://" + a.ip + ":8080/")
	if err != nil {
		t.Fatalf("host to pod a: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "hello-from-a\n" {
		t.Errorf("host to pod a: %s %q", res.Status, body)
	}

	// Removing the sandboxes runs CNI DEL: host-local gives the addresses back.
	ipamDir := filepath.Join(opts.IPAMDataDir, netName)
	if !slices.Contains(listDir(ipamDir), a.ip) || !slices.Contains(listDir(ipamDir), b.ip) {
		t.Errorf("host-local's records %s hold %q, want %s and %s", ipamDir, listDir(ipamDir), a.ip, b.ip)
	}
	for _, p := range []*pod{a, b} {
		p.remove(t, ctx)
	}
	if left := slices.DeleteFunc(listDir(ipamDir), func(n string) bool { return strings.HasPrefix(n, "last_reserved_ip") || n == "lock" }); len(left) > 0 {
		t.Errorf("addresses still reserved after the sandboxes were removed: %q", left)
	}
	if list, err := rt.ListPodSandbox(ctx, nil); err != nil || len(list) != 0 {
		t.Errorf("sandboxes left: %v, %v", list, err)
	}
}

type pod struct {
	rt                *cri.Runtime
	name, sandbox, id string
	ip                string
}

// runPod runs a sandbox in its own network namespace and a busybox
// container in it running script.
func runPod(t *testing.T, ctx context.Context, rt *cri.Runtime, dir, name, script string) *pod {
	t.Helper()
	podNetwork := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname:     name,
		LogDirectory: filepath.Join(dir, "pods", name),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: podNetwork},
		},
	}
	if err := os.MkdirAll(sbConfig.LogDirectory, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	p := &pod{rt: rt, name: name, sandbox: sb}
	t.Cleanup(func() { p.remove(t, context.Background()) })
	st, err := rt.PodSandboxStatus(ctx, sb, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.GetNetwork().GetIp() == "" {
		t.Fatalf("sandbox %s has no IP: %v", name, st.Status)
	}
	p.ip = st.Status.Network.Ip
	cConfig := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		Image:    &runtimeapi.ImageSpec{Image: images.BusyboxRef},
		Command:  []string{"sh", "-c", script},
		LogPath:  "main/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNetwork},
		},
	}
	if p.id, err = rt.CreateContainer(ctx, sb, cConfig, sbConfig); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, p.id); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pod) exec(ctx context.Context, script string) (string, error) {
	stdout, stderr, code, err := p.rt.ExecSync(ctx, p.id, []string{"sh", "-c", script}, 10*time.Second)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return string(stdout), fmt.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
	return string(stdout), nil
}

// execOK runs script in the pod and wants exit 0 and, unless want is
// empty, that output.
func (p *pod) execOK(t *testing.T, ctx context.Context, what, script, want string) {
	t.Helper()
	out, err := p.exec(ctx, script)
	if err != nil || (want != "" && out != want) {
		t.Errorf("%s (pod %s: %s): %q, %v; want %q", what, p.name, script, out, err, want)
	}
}

// eventually is execOK that tries for up to 30 s (a server starting up).
// (Bound wget with the timeout applet: Debian 12's busybox-static 1.35
// wget -T crashes with SIGSEGV.)
func (p *pod) eventually(t *testing.T, ctx context.Context, what, script, want string) {
	t.Helper()
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out, err = p.exec(ctx, script); err == nil && out == want {
			return
		}
	}
	t.Errorf("%s (pod %s: %s): %q, %v; want %q", what, p.name, script, out, err, want)
}

// remove stops and removes the container and the sandbox (once).
func (p *pod) remove(t *testing.T, ctx context.Context) {
	if p.sandbox == "" {
		return
	}
	if p.id != "" {
		if err := p.rt.StopContainer(ctx, p.id, 2); err != nil && !cri.IsNotFound(err) {
			t.Error(err)
		}
		if err := p.rt.RemoveContainer(ctx, p.id); err != nil && !cri.IsNotFound(err) {
			t.Error(err)
		}
	}
	if err := p.rt.StopPodSandbox(ctx, p.sandbox); err != nil && !cri.IsNotFound(err) {
		t.Error(err)
	}
	if err := p.rt.RemovePodSandbox(ctx, p.sandbox); err != nil && !cri.IsNotFound(err) {
		t.Error(err)
	}
	p.sandbox, p.id = "", ""
}

// allowForwardingOnTheBridge: with br_netfilter loaded, frames between
// two ports of the bridge go through iptables' FORWARD chain. Where its
// policy is not ACCEPT (Docker sets DROP), pod-to-pod traffic on the
// bridge needs a rule; the test adds the narrowest one for the test's
// bridge and removes it afterwards. Host-to-pod traffic does not pass
// FORWARD.
func allowForwardingOnTheBridge(t *testing.T, bridge string) {
	out, err := exec.Command("iptables", "-S", "FORWARD").Output()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v", err)
	}
	nf, _ := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if strings.Contains(string(out), "-P FORWARD ACCEPT") || strings.TrimSpace(string(nf)) != "1" {
		t.Logf("no FORWARD rule needed: bridge-nf-call-iptables=%q, %s", strings.TrimSpace(string(nf)), strings.SplitN(string(out), "\n", 2)[0])
		return
	}
	rule := []string{"FORWARD", "-i", bridge, "-o", bridge, "-m", "comment", "--comment", "orch network test", "-j", "ACCEPT"}
	if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables -I %s: %v: %s", strings.Join(rule, " "), err, out)
	}
	t.Logf("FORWARD policy is not ACCEPT: added iptables -I %s", strings.Join(rule, " "))
	t.Cleanup(func() {
		if out, err := exec.Command("iptables", append([]string{"-D"}, rule...)...).CombinedOutput(); err != nil {
			t.Errorf("iptables -D %s: %v: %s", strings.Join(rule, " "), err, out)
		}
	})
}

func iptablesSave(t *testing.T) string {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ":") { // comments with dates; counters
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// missing returns the paths that do not exist.
func missing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			out = append(out, p)
		}
	}
	return out
}

func listDir(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
