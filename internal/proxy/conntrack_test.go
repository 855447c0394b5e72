package proxy

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func flow(proto uint8, dst string, dport uint16, replySrc string, rport uint16) *netlink.ConntrackFlow {
	f := &netlink.ConntrackFlow{}
	f.Forward.Protocol = proto
	f.Forward.DstIP, f.Forward.DstPort = net.ParseIP(dst), dport
	f.Reverse.SrcIP, f.Reverse.SrcPort = net.ParseIP(replySrc), rport
	return f
}

func udpOf(t *testing.T, in Input) udpState { t.Helper(); return Build(in).UDP }

func TestStaleFilter(t *testing.T) {
	base := loadInput(t, "protocols") // UDP dns at 10.43.0.10:53 → 10.42.1.2:53
	withEndpoint := func(ip string) Input {
		in := loadInput(t, "protocols")
		in.Slices[0].Endpoints[0].Addresses = []string{ip}
		return in
	}
	noEndpoints := loadInput(t, "protocols")
	noEndpoints.Slices = noEndpoints.Slices[1:]

	for _, tc := range []struct {
		name       string
		prev, next udpState
		want       bool // a filter
		match      []*netlink.ConntrackFlow
		keep       []*netlink.ConntrackFlow
	}{
		{name: "no change", prev: udpOf(t, base), next: udpOf(t, base)},
		{name: "TCP-only change is not a UDP matter", prev: udpOf(t, loadInput(t, "clusterip")), next: udpOf(t, without(loadInput(t, "clusterip"), "web"))},
		{
			name: "UDP endpoint replaced", prev: udpOf(t, base), next: udpOf(t, withEndpoint("10.42.1.3")), want: true,
			match: []*netlink.ConntrackFlow{flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.42.1.2", 53)},
			keep: []*netlink.ConntrackFlow{
				flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.42.1.3", 53), // to the new endpoint
				flow(unix.IPPROTO_TCP, "10.43.0.10", 53, "10.42.1.2", 53), // TCP
				flow(unix.IPPROTO_UDP, "10.43.0.99", 53, "10.42.1.2", 53), // another service
			},
		},
		{
			name: "UDP service gets endpoints", prev: udpOf(t, noEndpoints), next: udpOf(t, base), want: true,
			// Not DNATed while the service had no endpoint: the reply comes from the VIP.
			match: []*netlink.ConntrackFlow{flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.43.0.10", 53)},
			keep:  []*netlink.ConntrackFlow{flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.42.1.2", 53)},
		},
		{
			name: "UDP service loses its endpoints", prev: udpOf(t, base), next: udpOf(t, noEndpoints), want: true,
			match: []*netlink.ConntrackFlow{flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.42.1.2", 53)},
		},
		{
			name: "UDP service deleted", prev: udpOf(t, base), next: udpOf(t, without(base, "dns")), want: true,
			match: []*netlink.ConntrackFlow{flow(unix.IPPROTO_UDP, "10.43.0.10", 53, "10.42.1.2", 53)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := staleFilter(tc.prev, tc.next)
			if (f != nil) != tc.want {
				t.Fatalf("filter = %v, want one: %v", f, tc.want)
			}
			for _, fl := range tc.match {
				if !f.MatchConntrackFlow(fl) {
					t.Errorf("flow %s not deleted", fl)
				}
			}
			for _, fl := range tc.keep {
				if f.MatchConntrackFlow(fl) {
					t.Errorf("flow %s deleted", fl)
				}
			}
		})
	}
}

func TestFlowFilterNodePortAndExternal(t *testing.T) {
	f := &flowFilter{
		frontends: map[string]map[string]bool{"192.168.0.200:53": {"10.42.1.2:53": true}},
		nodePorts: map[int]map[string]bool{30053: {"10.42.1.2:53": true}},
	}
	for _, tc := range []struct {
		fl   *netlink.ConntrackFlow
		want bool
	}{
		{flow(unix.IPPROTO_UDP, "192.168.0.200", 53, "10.42.9.9", 53), true},
		{flow(unix.IPPROTO_UDP, "192.168.0.200", 53, "10.42.1.2", 53), false},
		{flow(unix.IPPROTO_UDP, "192.168.0.2", 30053, "10.42.9.9", 53), true},
		{flow(unix.IPPROTO_UDP, "192.168.0.2", 30053, "10.42.1.2", 53), false},
		{flow(unix.IPPROTO_UDP, "192.168.0.2", 30054, "10.42.9.9", 53), false},
	} {
		if got := f.MatchConntrackFlow(tc.fl); got != tc.want {
			t.Errorf("match %s = %v, want %v", tc.fl, got, tc.want)
		}
	}
	if got := f.String(); got != "*:30053,192.168.0.200:53" {
		t.Errorf("String() = %q", got)
	}
}
