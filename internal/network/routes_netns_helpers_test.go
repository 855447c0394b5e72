package network

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"k8s.io/client-go/kubernetes"
)

// requireNetnsTools skips the test unless it runs as root with ip,
// bridge, iptables and busybox (for ping) at hand.
func requireNetnsTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes network namespaces, veths, bridges and VXLAN devices")
	}
	for _, tool := range []string{"ip", "bridge", "iptables", "iptables-save", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian: iproute2, iptables, busybox-static): %v", tool, err)
		}
	}
}

// lab is a set of network namespaces of one test, deleted at its end.
type lab struct {
	t      *testing.T
	prefix string
}

func newLab(t *testing.T) *lab {
	return &lab{t: t, prefix: fmt.Sprintf("orchrt%d", os.Getpid()%100000)}
}

// ns makes the namespace prefix-suffix with its loopback up; its name.
func (l *lab) ns(suffix string) string {
	name := l.prefix + "-" + suffix
	l.sh("ip", "netns", "add", name)
	l.t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			l.t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	l.sh("ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// sh runs a command and fails the test when it fails; its output.
func (l *lab) sh(args ...string) string {
	l.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// in runs a command in namespace ns; its output and error.
func (l *lab) in(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	return string(out), err
}

// inOK is in, failing the test on an error.
func (l *lab) inOK(ns string, args ...string) string {
	l.t.Helper()
	out, err := l.in(ns, args...)
	if err != nil {
		l.t.Fatalf("in %s: %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return out
}

// world makes the namespace that joins the nodes: a bridge holding addr
// (e.g. 172.31.77.1/24), the "outside" of the cluster.
func (l *lab) world(addr string) string {
	w := l.ns("w")
	l.sh("ip", "-n", w, "link", "add", "br0", "type", "bridge")
	l.sh("ip", "-n", w, "addr", "add", addr, "dev", "br0")
	l.sh("ip", "-n", w, "link", "set", "br0", "up")
	return w
}

// node makes a node namespace whose eth0 (addr, e.g. 172.31.77.11/24) is
// on the world's bridge with a default route via gw, and whose pod
// bridge orch0 holds the podCIDR's gateway; then a pod namespace behind
// a veth on orch0 with podAddr (e.g. 10.42.1.2/24) and the given MTU.
// FORWARD's policy in the node is DROP, as Docker sets it. The names of
// the node's and the pod's namespaces.
func (l *lab) node(world, name, addr, gw, bridgeAddr, podAddr string, podMTU int) (string, string) {
	n, p := l.ns(name), l.ns(name+"p")
	l.sh("ip", "-n", n, "link", "add", "eth0", "type", "veth", "peer", "name", "v"+name, "netns", world)
	l.sh("ip", "-n", world, "link", "set", "v"+name, "master", "br0", "up")
	l.sh("ip", "-n", n, "addr", "add", addr, "dev", "eth0")
	l.sh("ip", "-n", n, "link", "set", "eth0", "up")
	l.sh("ip", "-n", n, "route", "add", "default", "via", gw)
	l.sh("ip", "-n", n, "link", "add", "orch0", "type", "bridge")
	l.sh("ip", "-n", n, "addr", "add", bridgeAddr, "dev", "orch0")
	l.sh("ip", "-n", n, "link", "set", "orch0", "up")
	l.sh("ip", "-n", p, "link", "add", "eth0", "mtu", fmt.Sprint(podMTU), "type", "veth", "peer", "name", "veth0", "netns", n)
	l.sh("ip", "-n", n, "link", "set", "veth0", "master", "orch0", "up")
	l.sh("ip", "-n", p, "addr", "add", podAddr, "dev", "eth0")
	l.sh("ip", "-n", p, "link", "set", "eth0", "up")
	l.sh("ip", "-n", p, "route", "add", "default", "via", strings.Split(bridgeAddr, "/")[0])
	l.inOK(n, "iptables", "-P", "FORWARD", "DROP")
	return n, p
}

// inNetns runs fn on a thread of its own in namespace ns; the thread
// ends with it, so no other goroutine runs in ns.
func inNetns(t *testing.T, ns string, fn func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes when the goroutine ends
		h, err := netns.GetFromName(ns)
		if err == nil {
			defer h.Close()
			err = netns.Set(h)
		}
		if err == nil {
			fn()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("enter network namespace %s: %v", ns, err)
	}
}

// echoRemote listens on addr in namespace ns and answers each connection
// with the host part of its remote address (what the receiver sees).
func echoRemote(t *testing.T, ns, addr string) {
	var ln net.Listener
	var err error
	inNetns(t, ns, func() { ln, err = net.Listen("tcp", addr) })
	if err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			io.WriteString(c, host)
			c.Close()
		}
	}()
}

// seenBy connects from namespace ns to addr (an echoRemote) and returns
// the address the receiver saw.
func seenBy(t *testing.T, ns, addr string) (string, error) {
	var c net.Conn
	var err error
	inNetns(t, ns, func() { c, err = net.DialTimeout("tcp", addr, 5*time.Second) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// runRouterIn runs a Router for cfg in namespace ns (its Start on a thread
// of its own in ns) and waits until it is Ready. stop ends it and fails
// the test unless Start returned nil; it runs at the test's end at the
// latest.
func runRouterIn(t *testing.T, ns string, cfg RouteConfig, client kubernetes.Interface, log *slog.Logger) (stop func()) {
	t.Helper()
	r, err := NewRouter(cfg, client, log)
	if err != nil {
		t.Fatal(err)
	}
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		defer h.Close()
		runtime.LockOSThread() // never unlocked: the thread goes when Start returns
		if err := netns.Set(h); err != nil {
			done <- err
			return
		}
		done <- r.Start(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("router in %s: %v", ns, err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-r.Ready():
	case err := <-done:
		once.Do(cancel) // Start is over: stop must not wait for it
		t.Fatalf("router in %s ended before it was Ready: %v", ns, err)
	case <-time.After(time.Minute): // a guard, not an assertion
		t.Fatalf("router in %s not Ready after a minute", ns)
	}
	return stop
}
