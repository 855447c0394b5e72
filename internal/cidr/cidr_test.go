package cidr

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestGatewayIP(t *testing.T) {
	for in, want := range map[string]string{
		"10.42.1.0/24": "10.42.1.1", "10.42.1.7/24": "10.42.1.1", "fd00:42::/64": "fd00:42::1",
	} {
		if got, err := GatewayIP(in); err != nil || got.String() != want {
			t.Errorf("GatewayIP(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := GatewayIP("10.42.1.0"); err == nil {
		t.Error("GatewayIP of an address without a prefix length: no error")
	}
}

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "": an error
	}{
		{"10.42.0.0/16", "[10.42.0.0/16]"},
		{"10.42.0.7/16", "[10.42.0.0/16]"},
		{"10.42.0.0/16,fd00:42::/56", "[10.42.0.0/16 fd00:42::/56]"},
		{"fd00:42::/56, 10.42.0.0/16", "[fd00:42::/56 10.42.0.0/16]"},
		{"10.42.0.0/16,10.43.0.0/16", ""},
		{"fd00:42::/56,fd00:43::/56", ""},
		{"10.42.0.0/16,fd00:42::/56,10.1.0.0/16", ""},
		{"10.42.0.0", ""},
		{"", ""},
		{"::ffff:10.42.0.0/112", ""},
	} {
		got, err := ParseList("--cluster-cidr", tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseList(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("ParseList(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	ps, _ := ParseList("", "10.42.0.0/16,fd00:42::/56")
	if p, ok := Of(ps, false); !ok || p.String() != "fd00:42::/56" {
		t.Errorf("Of(IPv6) = %v, %v", p, ok)
	}
	if _, ok := Of(ps[:1], false); ok {
		t.Error("Of(IPv6) of an IPv4-only list found one")
	}
}

func TestParseNets(t *testing.T) {
	nets, err := ParseNets("--cluster-cidr", "10.42.0.7/16,fd00:42::/56")
	if err != nil || len(nets) != 2 || nets[0].String() != "10.42.0.0/16" || len(nets[0].IP) != 4 || nets[1].String() != "fd00:42::/56" {
		t.Fatalf("ParseNets = %v, %v; want 10.42.0.0/16 (4-byte) and fd00:42::/56", nets, err)
	}
	if _, err := ParseNets("--cluster-cidr", "10.42.0.0/16,10.43.0.0/16"); err == nil {
		t.Error("ParseNets of two IPv4 ranges: no error")
	}
}

func TestFamilies(t *testing.T) {
	for _, c := range []struct {
		ip     string
		family corev1.IPFamily
		v4, v6 string // AddrOf for each family
	}{
		{"10.42.0.7", corev1.IPv4Protocol, "10.42.0.7", ""},
		{" 10.42.0.7", corev1.IPv4Protocol, "10.42.0.7", ""},
		{"fd00:42::7", corev1.IPv6Protocol, "", "fd00:42::7"},
		{"FD00:0042:0:0::7", corev1.IPv6Protocol, "", "fd00:42::7"},
		{"::ffff:10.42.0.7", corev1.IPv4Protocol, "10.42.0.7", ""},
		{"not-an-ip", corev1.IPv4Protocol, "", ""},
		{"", corev1.IPv4Protocol, "", ""},
	} {
		if got := FamilyOf(c.ip); got != c.family {
			t.Errorf("FamilyOf(%q) = %s, want %s", c.ip, got, c.family)
		}
		if got := AddrOf(c.ip, corev1.IPv4Protocol); got != c.v4 {
			t.Errorf("AddrOf(%q, IPv4) = %q, want %q", c.ip, got, c.v4)
		}
		if got := AddrOf(c.ip, corev1.IPv6Protocol); got != c.v6 {
			t.Errorf("AddrOf(%q, IPv6) = %q, want %q", c.ip, got, c.v6)
		}
	}
}

func TestPodIPs(t *testing.T) {
	dual := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.42.0.7", PodIPs: []corev1.PodIP{{IP: "10.42.0.7"}, {IP: "fd00:42::7"}}}}
	legacy := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.42.0.8"}}
	pending := &corev1.Pod{}
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		ips    string
		v4, v6 string
	}{
		{"dual stack", dual, "[10.42.0.7 fd00:42::7]", "10.42.0.7", "fd00:42::7"},
		{"podIP only", legacy, "[10.42.0.8]", "10.42.0.8", ""},
		{"no address yet", pending, "[]", "", ""},
	} {
		if got := fmt.Sprint(PodIPs(c.pod)); got != c.ips {
			t.Errorf("%s: PodIPs = %s, want %s", c.name, got, c.ips)
		}
		if got := PodIPOf(c.pod, corev1.IPv4Protocol); got != c.v4 {
			t.Errorf("%s: PodIPOf(IPv4) = %q, want %q", c.name, got, c.v4)
		}
		if got := PodIPOf(c.pod, corev1.IPv6Protocol); got != c.v6 {
			t.Errorf("%s: PodIPOf(IPv6) = %q, want %q", c.name, got, c.v6)
		}
	}
}
