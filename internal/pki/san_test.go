package pki

import (
	"net"
	"strings"
	"testing"
)

func TestFirstServiceIP(t *testing.T) {
	tests := []struct {
		cidr    string
		want    string
		wantErr string
	}{
		{cidr: "10.43.0.0/16", want: "10.43.0.1"},
		{cidr: "10.96.0.0/12", want: "10.96.0.1"},
		{cidr: "192.168.0.0/30", want: "192.168.0.1"},
		{cidr: "10.43.7.9/16", want: "10.43.0.1"}, // host bits are masked off
		{cidr: "fd00:43::/112", want: "fd00:43::1"},
		{cidr: "10.0.0.0/31", wantErr: "too small"},
		{cidr: "10.0.0.5/32", wantErr: "too small"},
		{cidr: "fd00::/127", wantErr: "too small"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			_, cidr, err := net.ParseCIDR(tt.cidr)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cidr == "10.43.7.9/16" {
				cidr.IP = net.ParseIP("10.43.7.9") // unmasked, as a hand-built IPNet may be
			}
			got, err := FirstServiceIP(cidr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(net.ParseIP(tt.want)) {
				t.Errorf("FirstServiceIP(%s) = %s, want %s", tt.cidr, got, tt.want)
			}
		})
	}
	if _, err := FirstServiceIP(nil); err == nil {
		t.Errorf("FirstServiceIP(nil) succeeded")
	}
	if _, err := FirstServiceIP(&net.IPNet{IP: net.ParseIP("10.0.0.0"), Mask: net.IPMask{255, 0, 255, 0}}); err == nil {
		t.Errorf("non-canonical mask accepted")
	}
}

func TestWantedSANsDefaults(t *testing.T) {
	s, err := wantedSANs(Config{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"h", "kubernetes.default.svc.cluster.local"} {
		if !strings.Contains(strings.Join(s.dnsNames, " "), name) {
			t.Errorf("default SANs %v lack %q", s.dnsNames, name)
		}
	}
	var found bool
	for _, ip := range s.ips {
		found = found || ip.Equal(net.ParseIP("10.43.0.1"))
	}
	if !found {
		t.Errorf("default SANs %v lack 10.43.0.1", s.ips)
	}
}

func TestValidDNSName(t *testing.T) {
	tests := map[string]bool{
		"api.example.com":                true,
		"*.example.com":                  true,
		"node_1.local":                   true,
		"example.com.":                   true,
		"":                               false,
		"has space.com":                  false,
		"-lead.example.com":              false,
		"a..b":                           false,
		"a/b":                            false,
		strings.Repeat("a", 64) + ".com": false,
	}
	for name, want := range tests {
		if got := validDNSName(name); got != want {
			t.Errorf("validDNSName(%q) = %v, want %v", name, got, want)
		}
	}
}
