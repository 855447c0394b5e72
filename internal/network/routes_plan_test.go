package network

import (
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// routeNode is a Node with a podCIDR and addresses ("" leaves either out).
func routeNode(name, podCIDR string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR}, Status: corev1.NodeStatus{Addresses: addrs}}
}

// dual is a dual-stack Node with the i-th podCIDRs of 10.42.0.0/16 and
// fd00:42::/56, and InternalIPs ips.
func dual(name string, i int, ips ...string) *corev1.Node {
	n := routeNode(name, "")
	n.Spec.PodCIDRs = []string{fmt.Sprintf("10.42.%d.0/24", i), fmt.Sprintf("fd00:42:0:%x::/64", i)}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, internal(ip))
	}
	return n
}

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

func internal(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

// planString renders a plan one line per entry, for comparing.
func planString(p routePlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "local %v\n", p.LocalPodCIDR)
	for _, r := range p.Routes {
		fmt.Fprintf(&b, "route %s %s via %s onlink=%v\n", r.Peer, r.Dst, r.Gw, r.OnLink)
	}
	for _, n := range p.Neighs {
		fmt.Fprintf(&b, "neigh %s %s\n", n.IP, n.MAC)
	}
	for _, f := range p.FDB {
		fmt.Fprintf(&b, "fdb %s dst %s\n", f.MAC, f.Dst)
	}
	return b.String()
}

func TestPlanRoutes(t *testing.T) {
	self := routeNode("a", "10.42.1.0/24", internal("192.168.0.1"))
	b := routeNode("b", "10.42.2.0/24", internal("192.168.0.2"))
	c := routeNode("c", "10.42.3.0/24", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "c"}, internal("fd00::3"), internal("192.168.0.3"))
	for _, tc := range []struct {
		name    string
		backend string
		nodes   []*corev1.Node
		want    string
		warn    []string // substrings, one per warning, in order
		dual    bool     // the cluster CIDRs are 10.42.0.0/16 and fd00:42::/56 (else the first only)
	}{{
		name: "vxlan: route, neighbour and FDB entry per peer, sorted by name", backend: BackendVXLAN,
		nodes: []*corev1.Node{c, self, b},
		want: "local 10.42.1.0/24\n" +
			"route b 10.42.2.0/24 via 10.42.2.0 onlink=true\nroute c 10.42.3.0/24 via 10.42.3.0 onlink=true\n" +
			"neigh 10.42.2.0 0e:6f:c0:a8:00:02\nneigh 10.42.3.0 0e:6f:c0:a8:00:03\n" +
			"fdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\nfdb 0e:6f:c0:a8:00:03 dst 192.168.0.3\n",
	}, {
		name: "host-gw: a route via each peer's InternalIP", backend: BackendHostGW,
		nodes: []*corev1.Node{self, b, c},
		want:  "local 10.42.1.0/24\nroute b 10.42.2.0/24 via 192.168.0.2 onlink=false\nroute c 10.42.3.0/24 via 192.168.0.3 onlink=false\n",
	}, {
		name: "this node not registered yet: peers are routed all the same", backend: BackendHostGW,
		nodes: []*corev1.Node{b},
		want:  "local <nil>\nroute b 10.42.2.0/24 via 192.168.0.2 onlink=false\n",
	}, {
		name: "a peer without a podCIDR yet, or with an IPv6 one only, is skipped quietly", backend: BackendVXLAN,
		nodes: []*corev1.Node{self, routeNode("d", "", internal("192.168.0.4")), routeNode("e", "fd42::/64", internal("192.168.0.5"))},
		want:  "local 10.42.1.0/24\n",
	}, {
		name: "PodCIDRs: the IPv4 one of a dual-stack node", backend: BackendHostGW,
		nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "f"},
			Spec:   corev1.NodeSpec{PodCIDR: "fd42::/64", PodCIDRs: []string{"fd42::/64", "10.42.6.0/24"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{internal("192.168.0.6")}}}},
		want: "local <nil>\nroute f 10.42.6.0/24 via 192.168.0.6 onlink=false\n",
	}, {
		name: "peers that cannot be routed are warned about; the others are routed", backend: BackendHostGW,
		nodes: []*corev1.Node{
			self, b,
			routeNode("no-ip", "10.42.7.0/24", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.7"}),
			routeNode("outside", "10.99.0.0/24", internal("192.168.0.8")),
			routeNode("overlap-self", "10.42.1.0/25", internal("192.168.0.9")),
			routeNode("same-ip", "10.42.10.0/24", internal("192.168.0.2")),
			routeNode("bad-cidr", "10.42.11.1/24", internal("192.168.0.11")),
			routeNode("zz-overlap-b", "10.42.2.0/24", internal("192.168.0.12")),
		},
		want: "local 10.42.1.0/24\nroute b 10.42.2.0/24 via 192.168.0.2 onlink=false\n",
		warn: []string{
			`node "bad-cidr" has podCIDR "10.42.11.1/24", not a valid CIDR`,
			`node "no-ip" has no IPv4 InternalIP`,
			`node "outside" has podCIDR 10.99.0.0/24, outside the cluster CIDR 10.42.0.0/16`,
			`node "overlap-self" has podCIDR 10.42.1.0/25, which overlaps node "a"'s 10.42.1.0/24`,
			`node "same-ip" has InternalIP 192.168.0.2, the same as node "b"`,
			`node "zz-overlap-b" has podCIDR 10.42.2.0/24, which overlaps node "b"'s`,
		},
	}, {
		name: "a peer with this node's IP is not routed", backend: BackendVXLAN,
		nodes: []*corev1.Node{routeNode("old-a", "10.42.9.0/24", internal("192.168.0.1"))},
		want:  "local <nil>\n",
		warn:  []string{`node "old-a" has InternalIP 192.168.0.1, the same as node "a"`},
	}, {
		name: "this node's podCIDR outside the cluster CIDR is not used", backend: BackendVXLAN,
		nodes: []*corev1.Node{routeNode("a", "10.50.1.0/24", internal("192.168.0.1"))},
		want:  "local <nil>\n",
		warn:  []string{"this node's podCIDR 10.50.1.0/24 is outside the cluster CIDR"},
	}, {
		name: "vxlan, dual stack: both families over the IPv4 underlay, one FDB entry per peer", backend: BackendVXLAN, dual: true,
		nodes: []*corev1.Node{dual("a", 1, "192.168.0.1"), dual("b", 2, "192.168.0.2"), routeNode("c", "10.42.3.0/24", internal("192.168.0.3"))},
		want: "local 10.42.1.0/24\n" +
			"route b 10.42.2.0/24 via 10.42.2.0 onlink=true\nroute c 10.42.3.0/24 via 10.42.3.0 onlink=true\nroute b fd00:42:0:2::/64 via fd00:42:0:2:: onlink=true\n" +
			"neigh 10.42.2.0 0e:6f:c0:a8:00:02\nneigh 10.42.3.0 0e:6f:c0:a8:00:03\nneigh fd00:42:0:2:: 0e:6f:c0:a8:00:02\n" +
			"fdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\nfdb 0e:6f:c0:a8:00:03 dst 192.168.0.3\n",
	}, {
		name: "host-gw, dual stack: IPv6 via the peer's IPv6 InternalIP; a peer without one is warned about", backend: BackendHostGW, dual: true,
		nodes: []*corev1.Node{dual("a", 1, "192.168.0.1", "fd00::1"), dual("b", 2, "192.168.0.2", "fd00::2"), dual("c", 3, "192.168.0.3")},
		want: "local 10.42.1.0/24\n" +
			"route b 10.42.2.0/24 via 192.168.0.2 onlink=false\nroute c 10.42.3.0/24 via 192.168.0.3 onlink=false\nroute b fd00:42:0:2::/64 via fd00::2 onlink=false\n",
		warn: []string{`node "c" has no IPv6 InternalIP`},
	}, {
		name: "dual stack: an IPv6 podCIDR outside the IPv6 cluster CIDR is not routed", backend: BackendVXLAN, dual: true,
		nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec:   corev1.NodeSpec{PodCIDRs: []string{"10.42.2.0/24", "fd99::/64"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{internal("192.168.0.2")}}}},
		want: "local <nil>\nroute b 10.42.2.0/24 via 10.42.2.0 onlink=true\nneigh 10.42.2.0 0e:6f:c0:a8:00:02\nfdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\n",
		warn: []string{`node "b" has podCIDR fd99::/64, outside the cluster CIDR fd00:42::/56`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clusters := []*net.IPNet{mustCIDR("10.42.0.0/16")}
			if tc.dual {
				clusters = append(clusters, mustCIDR("fd00:42::/56"))
			}
			cfg := RouteConfig{NodeName: "a", NodeIP: net.ParseIP("192.168.0.1"), Backend: tc.backend}
			p, warnings := planRoutes(cfg, clusters, tc.nodes)
			if got := planString(p); got != tc.want {
				t.Errorf("plan:\n%s\nwant:\n%s", got, tc.want)
			}
			if len(warnings) != len(tc.warn) {
				t.Fatalf("warnings %q; want %d like %q", warnings, len(tc.warn), tc.warn)
			}
			for i, w := range tc.warn {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q; want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestVXLANMAC(t *testing.T) {
	for _, tc := range []struct {
		ip, want string
	}{
		{"10.0.0.1", "0e:6f:0a:00:00:01"},
		{"192.168.122.17", "0e:6f:c0:a8:7a:11"},
		{"::ffff:172.16.0.9", "0e:6f:ac:10:00:09"}, // IPv4-mapped is the IPv4 address
		{"fd00::1", ""},
	} {
		mac := vxlanMAC(net.ParseIP(tc.ip))
		if mac.String() != tc.want {
			t.Errorf("vxlanMAC(%s) = %q; want %q", tc.ip, mac, tc.want)
		}
		if mac != nil && (mac[0]&0x02 == 0 || mac[0]&0x01 != 0) {
			t.Errorf("vxlanMAC(%s) = %s is not a locally administered unicast MAC", tc.ip, mac)
		}
	}
}

func TestMTUOverhead(t *testing.T) {
	for backend, want := range map[string]int{BackendVXLAN: 50, "": 50, BackendHostGW: 0, BackendNone: 0} {
		if got := MTUOverhead(backend); got != want {
			t.Errorf("MTUOverhead(%q) = %d; want %d", backend, got, want)
		}
	}
}

func TestRouteKeyOf(t *testing.T) {
	base := routeNode("b", "10.42.2.0/24", internal("192.168.0.2"))
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	heartbeat.ResourceVersion = "7"
	newIP := base.DeepCopy()
	newIP.Status.Addresses[0].Address = "192.168.0.20"
	newCIDR := base.DeepCopy()
	newCIDR.Spec.PodCIDR = "10.42.20.0/24"
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		resync bool
	}{
		{"status heartbeat", heartbeat, false},
		{"new InternalIP", newIP, true},
		{"new podCIDR", newCIDR, true},
	} {
		if got := routeKeyOf(base) != routeKeyOf(tc.node); got != tc.resync {
			t.Errorf("%s: routes change = %v; want %v", tc.name, got, tc.resync)
		}
	}
}
