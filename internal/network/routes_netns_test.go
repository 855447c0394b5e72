package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"orch/internal/envtest"
)

// TestRoutesBetweenNodeNamespaces builds two nodes as network namespaces
// on one bridge (a third namespace, "the world"), each with a pod
// namespace behind its own orch0, and a FORWARD policy of DROP. A Router
// runs in each node namespace on the Nodes of a fake clientset (with a
// third node, c, on a subnet behind a router). For host-gw and vxlan it
// checks what the Router made; that pod a pings pod b and that over TCP
// each pod sees the other's pod IP (no NAT); that a pod reaching the
// world is masqueraded (the world sees the node IP); that deleting node b
// removes its route (and FDB and neighbour entries) from node a; and that
// CleanupRoutes removes everything of orch's and keeps a foreign route
// and foreign iptables rules. The host's own namespace is not touched.
func TestRoutesBetweenNodeNamespaces(t *testing.T) {
	requireNetnsTools(t)
	for _, backend := range []string{BackendHostGW, BackendVXLAN} {
		t.Run(backend, func(t *testing.T) { testRoutesBetweenNodes(t, backend) })
	}
}

func testRoutesBetweenNodes(t *testing.T, backend string) {
	l := newLab(t)
	l.prefix += backend[:1]
	mtu := 1500 - MTUOverhead(backend)
	w := l.world("172.31.77.1/24")
	a, pa := l.node(w, "a", "172.31.77.11/24", "172.31.77.1", "10.42.1.1/24", "10.42.1.2/24", mtu)
	b, pb := l.node(w, "b", "172.31.77.12/24", "172.31.77.1", "10.42.2.1/24", "10.42.2.2/24", mtu)

	// Somebody else's route and rules in node a, which CleanupRoutes keeps.
	l.sh("ip", "-n", a, "route", "add", "10.99.9.0/24", "via", "172.31.77.1")
	l.inOK(a, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.99.9.0/24", "-j", "MASQUERADE")
	l.inOK(a, "iptables", "-A", "FORWARD", "-s", "10.99.9.0/24", "-j", "ACCEPT")

	client := fake.NewClientset(
		routeNode("a", "10.42.1.0/24", internal("172.31.77.11")),
		routeNode("b", "10.42.2.0/24", internal("172.31.77.12")),
		routeNode("c", "10.42.3.0/24", internal("172.31.78.13")), // behind the world's router
		routeNode("d", "10.42.4.0/24", internal("172.31.77.14")), // on the bridge, but not running
	)
	var logs envtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t.Cleanup(func() { t.Logf("router logs:\n%s", logs.String()) })
	cfg := func(name, ip string) RouteConfig {
		return RouteConfig{NodeName: name, NodeIP: net.ParseIP(ip), Backend: backend, ClusterCIDR: "10.42.0.0/16",
			Resync: 300 * time.Millisecond} // so that the drift below is put back soon
	}
	stopA := runRouterIn(t, a, cfg("a", "172.31.77.11"), client, log.With("ns", "a"))
	runRouterIn(t, b, cfg("b", "172.31.77.12"), client, log.With("ns", "b"))

	// What the Router made in node a.
	contains := func(what, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %q in:\n%s", what, w, got)
			}
		}
	}
	routes := l.inOK(a, "ip", "route", "show", "proto", "123")
	macB, macC := "0e:6f:ac:1f:4d:0c", "0e:6f:ac:1f:4e:0d" // from 172.31.77.12, 172.31.78.13
	switch backend {
	case BackendHostGW:
		contains("routes", routes, "10.42.2.0/24 via 172.31.77.12 dev eth0", "10.42.4.0/24 via 172.31.77.14 dev eth0")
		if strings.Contains(routes, "10.42.3.0") {
			t.Errorf("host-gw routes to node c, which is not on a connected subnet:\n%s", routes)
		}
		contains("logs", logs.String(), "peer=c", "not on a directly connected subnet", "use the vxlan backend")
	case BackendVXLAN:
		contains("routes", routes, "10.42.2.0/24 via 10.42.2.0 dev orch.vxlan onlink", "10.42.3.0/24 via 10.42.3.0 dev orch.vxlan onlink")
		contains("orch.vxlan", l.inOK(a, "ip", "-d", "link", "show", "orch.vxlan"),
			"mtu 1450 ", "link/ether 0e:6f:ac:1f:4d:0b ", "vxlan id 1 ", "local 172.31.77.11 ", "dev eth0 ", "dstport 8472 ", "nolearning")
		contains("addresses of orch.vxlan", l.inOK(a, "ip", "addr", "show", "dev", "orch.vxlan"), "inet 10.42.1.0/32 ")
		contains("fdb", l.inOK(a, "bridge", "fdb", "show", "dev", "orch.vxlan"), macB+" dst 172.31.77.12 ", macC+" dst 172.31.78.13 ")
		contains("neighbours", l.inOK(a, "ip", "neigh", "show", "dev", "orch.vxlan"), "10.42.2.0 lladdr "+macB+" PERMANENT")
	}
	contains("nat", l.inOK(a, "iptables", "-t", "nat", "-S"),
		`-A POSTROUTING -m comment --comment "orch: cluster network NAT" -j ORCH-POSTROUTING`,
		"-A ORCH-POSTROUTING -s 10.42.0.0/16 -d 10.42.0.0/16", "-j MASQUERADE --random-fully")
	contains("filter", l.inOK(a, "iptables", "-S", "FORWARD"), "-P FORWARD DROP", "-j ORCH-FORWARD")
	contains("ip_forward", l.inOK(a, "cat", "/proc/sys/net/ipv4/ip_forward"), "1")

	// Pod to pod, both ways, with the pods' own addresses.
	envtest.Eventually(t, "pod a pings pod b", func() (bool, error) {
		if out, err := l.in(pa, "busybox", "ping", "-c", "1", "-W", "2", "10.42.2.2"); err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		return true, nil
	})
	echoRemote(t, pb, "10.42.2.2:8080")
	echoRemote(t, pa, "10.42.1.2:8080")
	if got, err := seenBy(t, pa, "10.42.2.2:8080"); err != nil || got != "10.42.1.2" {
		t.Errorf("pod b saw pod a's connection come from %q (%v); want 10.42.1.2, pod a's own IP", got, err)
	}
	if got, err := seenBy(t, pb, "10.42.1.2:8080"); err != nil || got != "10.42.2.2" {
		t.Errorf("pod a saw pod b's connection come from %q (%v); want 10.42.2.2, pod b's own IP", got, err)
	}
	// Pod to the world: masqueraded to the node's IP (the world has no
	// route to the pods, so an unmasqueraded connection would not work).
	echoRemote(t, w, "172.31.77.1:8081")
	if got, err := seenBy(t, pa, "172.31.77.1:8081"); err != nil || got != "172.31.77.11" {
		t.Errorf("the world saw pod a's connection come from %q (%v); want 172.31.77.11, node a's IP", got, err)
	}

	// Drift: a route and a rule removed by hand are put back.
	l.inOK(a, "ip", "route", "del", "10.42.2.0/24")
	l.inOK(a, "iptables", "-F", ForwardChain)
	envtest.Eventually(t, "node a puts its route and rules back", func() (bool, error) {
		routes := l.inOK(a, "ip", "route", "show", "proto", "123")
		rules := l.inOK(a, "iptables", "-S", ForwardChain)
		if !strings.Contains(routes, "10.42.2.0/24") || !strings.Contains(rules, "-d 10.42.0.0/16") {
			return false, fmt.Errorf("not yet:\n%s%s", routes, rules)
		}
		return true, nil
	})

	// Node b leaves: node a forgets it, and only it.
	if err := client.CoreV1().Nodes().Delete(context.Background(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "node a removes the route to node b's pods", func() (bool, error) {
		if routes := l.inOK(a, "ip", "route", "show", "proto", "123"); strings.Contains(routes, "10.42.2.0/24") {
			return false, errors.New("still there:\n" + routes)
		}
		return true, nil
	})
	if backend == BackendVXLAN {
		fdb := l.inOK(a, "bridge", "fdb", "show", "dev", "orch.vxlan")
		if strings.Contains(fdb, macB) {
			t.Errorf("node b's FDB entry is left:\n%s", fdb)
		}
		contains("fdb after b left", fdb, macC+" dst 172.31.78.13 ")
		if neigh := l.inOK(a, "ip", "neigh", "show", "dev", "orch.vxlan"); strings.Contains(neigh, "10.42.2.0 ") {
			t.Errorf("node b's neighbour entry is left:\n%s", neigh)
		}
		contains("routes after b left", l.inOK(a, "ip", "route", "show", "proto", "123"), "10.42.3.0/24 via 10.42.3.0 dev orch.vxlan onlink")
	}
	if out, err := l.in(pa, "busybox", "ping", "-c", "1", "-W", "1", "10.42.2.2"); err == nil {
		t.Errorf("pod a still reaches pod b after node b was deleted:\n%s", out)
	}

	// CleanupRoutes (twice) in node a, with its Router stopped.
	stopA()
	contains("routes before CleanupRoutes", l.inOK(a, "ip", "route", "show", "proto", "123"), "10.42.4.0/24 via ")
	for i := range 2 {
		var err error
		inNetns(t, a, func() { err = CleanupRoutes(log.With("ns", "a")) })
		if err != nil {
			t.Fatalf("CleanupRoutes (%d): %v", i+1, err)
		}
	}
	if routes := l.inOK(a, "ip", "route", "show", "proto", "123"); routes != "" {
		t.Errorf("routes left after CleanupRoutes:\n%s", routes)
	}
	if out, err := l.in(a, "ip", "link", "show", "orch.vxlan"); err == nil {
		t.Errorf("orch.vxlan left after CleanupRoutes:\n%s", out)
	}
	save := l.inOK(a, "iptables-save")
	if strings.Contains(save, "ORCH") {
		t.Errorf("iptables rules left after CleanupRoutes:\n%s", save)
	}
	contains("foreign iptables rules", save, ":FORWARD DROP", "-A POSTROUTING -s 10.99.9.0/24 -j MASQUERADE", "-A FORWARD -s 10.99.9.0/24 -j ACCEPT")
	contains("foreign route", l.inOK(a, "ip", "route", "show"), "10.99.9.0/24 via 172.31.77.1 dev eth0")
}

// TestIPv6PodsOverVXLAN runs the Router of two dual-stack nodes in
// network namespaces whose only underlay is IPv4: each pod reaches the
// other's IPv6 address with its own (no NAT), through a route, a permanent
// IPv6 neighbour and the one FDB entry per peer; the IPv6 forwarding sysctl
// and the ip6tables chains are in place, and CleanupRoutes removes the
// IPv6 routes and chains too.
func TestIPv6PodsOverVXLAN(t *testing.T) {
	requireNetnsTools(t)
	l := newLab(t)
	l.prefix += "6"
	mtu := 1500 - MTUOverhead(BackendVXLAN)
	w := l.world("172.31.79.1/24")
	a, pa := l.node(w, "a", "172.31.79.11/24", "172.31.79.1", "10.42.1.1/24", "10.42.1.2/24", mtu)
	b, pb := l.node(w, "b", "172.31.79.12/24", "172.31.79.1", "10.42.2.1/24", "10.42.2.2/24", mtu)
	for _, n := range []struct{ node, pod, gw, addr string }{{a, pa, "fd00:42:0:1::1/64", "fd00:42:0:1::2/64"}, {b, pb, "fd00:42:0:2::1/64", "fd00:42:0:2::2/64"}} {
		l.sh("ip", "-n", n.node, "addr", "add", n.gw, "dev", "orch0", "nodad")
		l.sh("ip", "-n", n.pod, "addr", "add", n.addr, "dev", "eth0", "nodad")
		l.sh("ip", "-n", n.pod, "-6", "route", "add", "default", "via", strings.Split(n.gw, "/")[0])
	}
	client := fake.NewClientset(dual("a", 1, "172.31.79.11"), dual("b", 2, "172.31.79.12"))
	var logs envtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t.Cleanup(func() { t.Logf("router logs:\n%s", logs.String()) })
	cfg := func(name, ip string) RouteConfig {
		return RouteConfig{NodeName: name, NodeIP: net.ParseIP(ip), Backend: BackendVXLAN, ClusterCIDR: "10.42.0.0/16,fd00:42::/56"}
	}
	stopA := runRouterIn(t, a, cfg("a", "172.31.79.11"), client, log.With("ns", "a"))
	runRouterIn(t, b, cfg("b", "172.31.79.12"), client, log.With("ns", "b"))

	macB := "0e:6f:ac:1f:4f:0c" // from 172.31.79.12
	for what, tc := range map[string]struct{ got, want string }{
		"IPv6 routes":     {l.inOK(a, "ip", "-6", "route", "show", "proto", "123"), "fd00:42:0:2::/64 via fd00:42:0:2:: dev orch.vxlan"},
		"IPv6 neighbours": {l.inOK(a, "ip", "-6", "neigh", "show", "dev", "orch.vxlan"), "fd00:42:0:2:: lladdr " + macB + " PERMANENT"},
		"ip6tables nat":   {l.inOK(a, "ip6tables", "-t", "nat", "-S"), "-A ORCH-POSTROUTING -s fd00:42::/56 -d fd00:42::/56"},
		"IPv6 forwarding": {l.inOK(a, "cat", "/proc/sys/net/ipv6/conf/all/forwarding"), "1"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("%s: no %q in:\n%s", what, tc.want, tc.got)
		}
	}
	if fdb := l.inOK(a, "bridge", "fdb", "show", "dev", "orch.vxlan"); strings.Count(fdb, macB) != 1 {
		t.Errorf("want one FDB entry for node b (both families share it):\n%s", fdb)
	}
	echoRemote(t, pb, "[fd00:42:0:2::2]:8080")
	envtest.Eventually(t, "pod a reaches pod b over IPv6 with its own address", func() (bool, error) {
		got, err := seenBy(t, pa, "[fd00:42:0:2::2]:8080")
		if err != nil {
			return false, err
		}
		if got != "fd00:42:0:1::2" {
			return false, fmt.Errorf("pod b saw %q, want fd00:42:0:1::2", got)
		}
		return true, nil
	})

	stopA()
	var err error
	inNetns(t, a, func() { err = CleanupRoutes(log.With("ns", "a")) })
	if err != nil {
		t.Fatal(err)
	}
	if routes := l.inOK(a, "ip", "-6", "route", "show", "proto", "123"); routes != "" {
		t.Errorf("IPv6 routes left after CleanupRoutes:\n%s", routes)
	}
	if save := l.inOK(a, "ip6tables-save"); strings.Contains(save, "ORCH") {
		t.Errorf("ip6tables rules left after CleanupRoutes:\n%s", save)
	}
}
