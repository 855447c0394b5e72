package network

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
)

// requireRealParts fails (never skips) when the pod network test cannot
// run here, and says how to fix it.
func requireRealParts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs containerd, runc and the CNI plugins and must run as root (make test does; scripts/test-deps.sh installs what it needs)")
	}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh as root", bin)
		}
	}
	for _, path := range []string{"/bin/busybox", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/portmap", "/usr/lib/cni/loopback"} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is missing: run scripts/test-deps.sh as root (it installs busybox-static and containernetworking-plugins)", path)
		}
	}
}

// TestPodNetworkOnABridge runs two pods through the real containerd with
// the conflist BridgeConfList writes, and checks that each gets an address
// on the pod CIDR, that they ping and reach each other over HTTP, and that
// the host reaches them. Removing the sandboxes frees their addresses.
func TestPodNetworkOnABridge(t *testing.T) {
	requireRealParts(t)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
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
	cfg := containerd.NewConfig(dir).WithState(filepath.Join(dir, "run"))
	opts := BridgeOptions{NetworkName: netName, Bridge: bridge, MTU: mtu, IPAMDataDir: filepath.Join(dir, "ipam")}
	conf, err := BridgeConfList(podCIDR, opts)
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

	sup := startContainerd(t, dir, cfg, log)
	importImages(t, ctx, cfg, log)
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
	for _, c := range st.Status.Conditions {
		if !c.Status {
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

// startContainerd runs a supervised containerd in dir until the test
// ends, and then checks that it and everything it started are gone.
func startContainerd(t *testing.T, dir string, cfg containerd.Config, log *slog.Logger) *containerd.Supervisor {
	t.Helper()
	sup := containerd.NewSupervisor(cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Start(ctx) }()
	t.Cleanup(func() {
		pid := sup.Pid()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v after its context ended", err)
		}
		if pid != 0 && syscall.Kill(pid, 0) == nil {
			t.Errorf("containerd (pid %d) still runs after Start returned", pid)
		}
		if t.Failed() {
			data, _ := os.ReadFile(cfg.LogPath)
			lines := strings.Split(string(data), "\n")
			t.Logf("containerd log:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		cleanUp(t, dir, cfg.Address)
	})
	select {
	case <-sup.Ready():
	case err := <-done:
		t.Fatalf("supervisor ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("containerd not ready after 60 s")
	}
	return sup
}

// importImages imports the built-in pause image and a busybox image.
func importImages(t *testing.T, ctx context.Context, cfg containerd.Config, log *slog.Logger) {
	t.Helper()
	if err := os.MkdirAll(cfg.ImagesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(cfg.ImagesDir, "busybox.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if err := images.WriteBusybox(f, "/bin/busybox", runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := containerd.NewStore(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	im := containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(runtime.GOARCH), log)
	im.Settle = 0
	if _, err := im.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// cleanUp kills the processes of the containerd at address that are left
// (its shims: the test failed to remove a pod) and unmounts what is left
// under dir, reporting both as errors.
func cleanUp(t *testing.T, dir, address string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(cmdline), address) {
			continue
		}
		var pid int
		fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		t.Errorf("process %d still runs after the test: %q", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		syscall.Kill(pid, syscall.SIGKILL)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		t.Errorf("still mounted after the test: %s", m)
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
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
