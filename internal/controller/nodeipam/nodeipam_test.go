package nodeipam

import (
	"net"
	"testing"
)

func TestNextFree(t *testing.T) {
	_, cidr, _ := net.ParseCIDR("10.42.0.0/16")
	cases := []struct {
		used map[string]bool
		want string
	}{
		{nil, "10.42.0.0/24"},
		{map[string]bool{"10.42.0.0/24": true}, "10.42.1.0/24"},
		{map[string]bool{"10.42.0.0/24": true, "10.42.2.0/24": true}, "10.42.1.0/24"},
	}
	for _, c := range cases {
		got, err := NextFree(cidr, 24, c.used)
		if err != nil || got != c.want {
			t.Errorf("NextFree(%v) = %q, %v; want %q", c.used, got, err, c.want)
		}
	}
	full := map[string]bool{}
	for i := 0; i < 256; i++ {
		full[(&net.IPNet{IP: offsetNetwork(cidr.IP, i, 8), Mask: net.CIDRMask(24, 32)}).String()] = true
	}
	if _, err := NextFree(cidr, 24, full); err == nil {
		t.Error("a full range must be an error")
	}
	if got, _ := NextFree(cidr, 24, map[string]bool{"10.42.0.0/24": true, "10.42.1.0/24": true, "10.42.2.0/24": true, "10.42.3.0/24": true, "10.42.4.0/24": true, "10.42.5.0/24": true, "10.42.6.0/24": true, "10.42.7.0/24": true, "10.42.8.0/24": true}); got != "10.42.9.0/24" {
		t.Errorf("after 9 used: %q", got)
	}
	_, small, _ := net.ParseCIDR("10.0.0.0/8")
	if got, _ := NextFree(small, 24, map[string]bool{"10.0.0.0/24": true}); got != "10.0.1.0/24" {
		t.Errorf("/8: %q", got)
	}
	if got := offsetNetwork(net.ParseIP("10.42.0.0").To4(), 300, 8).String(); got != "10.43.44.0" {
		t.Errorf("offset 300 of /24s from 10.42.0.0 = %s, want 10.43.44.0", got)
	}
	_, v6, _ := net.ParseCIDR("fd00:42::/56")
	if got, _ := NextFree(v6, 64, map[string]bool{"fd00:42::/64": true}); got != "fd00:42:0:1::/64" {
		t.Errorf("IPv6 /56 after one used /64: %q", got)
	}
}
