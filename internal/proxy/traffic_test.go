package proxy

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// endpointNetns starts a process in a network namespace of its own, joined
// to the test's namespace by a veth pair: here 10.42.1.1/24 on orch-h,
// there 10.42.1.5/24 with a default route back. It returns the pid.
func endpointNetns(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"ip", "nsenter", "busybox"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed", bin)
		}
	}
	sleeper := exec.Command("unshare", "--net", "--", "busybox", "sleep", "3600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := strconv.Itoa(sleeper.Process.Pid)
	self, _ := os.Readlink("/proc/self/ns/net")
	for i := 0; ; i++ { // until unshare has made the namespace
		ns, err := os.Readlink("/proc/" + pid + "/ns/net")
		if err == nil && ns != self {
			break
		}
		if i == 1000 {
			t.Fatal("the endpoint process never got its own network namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	run(t, "ip", "link", "set", "lo", "up")
	run(t, "ip", "link", "add", "orch-h", "type", "veth", "peer", "name", "orch-p")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "orch-h").Run() })
	run(t, "ip", "link", "set", "orch-p", "netns", pid)
	run(t, "ip", "addr", "add", "10.42.1.1/24", "dev", "orch-h")
	run(t, "ip", "link", "set", "orch-h", "up")
	run(t, "ip", "route", "add", "10.43.0.0/16", "dev", "orch-h")       // the service CIDR, as a node's default route would
	run(t, "ip", "addr", "add", testNodeIP.String()+"/32", "dev", "lo") // the node's own address
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", testNodeIP.String()+"/32", "dev", "lo").Run() })
	in := func(args ...string) { run(t, "nsenter", append([]string{"-t", pid, "-n"}, args...)...) }
	in("ip", "link", "set", "lo", "up")
	in("ip", "addr", "add", "10.42.1.5/24", "dev", "orch-p")
	in("ip", "link", "set", "orch-p", "up")
	in("ip", "route", "add", "default", "via", "10.42.1.1")
	return pid
}

// wget fetches url with busybox wget (Debian's busybox-static has no -T:
// the context bounds it). It returns the body, or the error and stderr.
func wget(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, "busybox", "wget", "-O", "-", url)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

func trafficInput() Input {
	web := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.43.0.10",
			Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}},
	}
	empty := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "empty"},
		Spec:       v1.ServiceSpec{ClusterIP: "10.43.0.11", Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}},
	}
	slice := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discovery.LabelServiceName: "web"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.42.1.5"}, NodeName: ptr.To("node-b")}},
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	return Input{NodeName: testNode, NodeIPs: []net.IP{testNodeIP}, ClusterCIDR: testCIDR,
		Services: []*v1.Service{web, empty}, Slices: []*discovery.EndpointSlice{slice}}
}

// TestTrafficThroughService sends HTTP through the rules: to a cluster IP,
// to a NodePort on the node's address, and to a service without endpoints
// (refused by the REJECT rule).
func TestTrafficThroughService(t *testing.T) {
	requireNetns(t)
	flushAll(t)
	t.Cleanup(func() { flushAll(t) })
	pid := endpointNetns(t)
	docroot := t.TempDir()
	if err := os.WriteFile(filepath.Join(docroot, "index.html"), []byte("hello from the endpoint\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("nsenter", "-t", pid, "-n", "busybox", "httpd", "-f", "-p", "8080", "-h", docroot)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	for i := 0; ; i++ { // until httpd listens
		if out, err := wget("http://10.42.1.5:8080/"); err == nil && strings.Contains(out, "hello") {
			break
		} else if i == 100 {
			t.Fatalf("the endpoint's httpd never answered: %v %s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if out, err := wget("http://10.43.0.10/"); err == nil {
		t.Fatalf("the cluster IP answered before any rule: %s", out)
	}
	if err := allowLocalhostNodePorts(slog.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := newRealSyncer(t).sync(time.Now(), trafficInput()); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://10.43.0.10/", "http://" + testNodeIP.String() + ":30080/", "http://127.0.0.1:30080/"} {
		if out, err := wget(url); err != nil || out != "hello from the endpoint\n" {
			t.Errorf("GET %s: %v %q", url, err, out)
		}
	}
	if out, err := wget("http://10.43.0.11/"); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("GET of a service without endpoints: %v %q, want connection refused", err, out)
	}
}

// TestConntrackDeletesStaleUDPFlows checks the netlink path with real UDP
// packets: after a UDP endpoint is replaced, the entry DNATed to the old
// one is gone and an unrelated one stays.
func TestConntrackDeletesStaleUDPFlows(t *testing.T) {
	requireNetns(t)
	flushAll(t)
	t.Cleanup(func() { flushAll(t) })
	s := newRealSyncer(t)
	in := loadInput(t, "protocols") // UDP 10.43.0.10:53 → 10.42.1.2:53
	if _, err := s.sync(time.Now(), in); err != nil {
		t.Fatal(err)
	}
	// A link for the endpoint subnet, with a static neighbour, so that UDP
	// packets leave (and their conntrack entries are confirmed).
	run(t, "ip", "link", "add", "orch-ct0", "type", "veth", "peer", "name", "orch-ct1")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "orch-ct0").Run() })
	run(t, "ip", "addr", "add", "10.42.1.1/24", "dev", "orch-ct0")
	run(t, "ip", "link", "set", "orch-ct0", "up")
	run(t, "ip", "link", "set", "orch-ct1", "up")
	run(t, "ip", "route", "add", "10.43.0.0/16", "dev", "orch-ct0")
	for _, ip := range []string{"10.42.1.2", "10.42.1.9"} {
		run(t, "ip", "neigh", "add", ip, "lladdr", "02:00:00:00:00:01", "dev", "orch-ct0")
	}
	send := func(addr string) {
		c, err := net.Dial("udp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("query")); err != nil {
			t.Fatal(err)
		}
	}
	send("10.43.0.10:53") // DNATed to the endpoint that goes away
	send("10.42.1.9:53")  // not a service
	udp53 := func() []string { return udpFlowsTo(t, unix.AF_INET, 53) }
	if got, want := udp53(), []string{"10.42.1.9>10.42.1.9", "10.43.0.10>10.42.1.2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("conntrack entries before: %v, want %v", got, want)
	}
	changed := loadInput(t, "protocols")
	changed.Slices[0].Endpoints[0].Addresses = []string{"10.42.1.3"}
	res, err := s.sync(time.Now(), changed)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := udp53(), []string{"10.42.1.9>10.42.1.9"}; res.ConntrackDeleted != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %d entries, left %v; want 1 deleted and %v left", res.ConntrackDeleted, got, want)
	}
}

// udpFlowsTo lists the conntrack entries of a family (unix.AF_INET or
// AF_INET6) for UDP to port, each as "original destination>reply source"
// (the endpoint after DNAT), sorted and without duplicates.
func udpFlowsTo(t *testing.T, family netlink.InetFamily, port uint16) []string {
	t.Helper()
	flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, family)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range flows {
		if f.Forward.Protocol == unix.IPPROTO_UDP && f.Forward.DstPort == port {
			out = append(out, f.Forward.DstIP.String()+">"+f.Reverse.SrcIP.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out) // a flow of an earlier run (-count) may still be there
}
