package server

import (
	"errors"
	"net"
	"testing"
)

func TestChooseAdvertise(t *testing.T) {
	host := func(ip string) func() net.IP { return func() net.IP { return net.ParseIP(ip) } }
	for _, tc := range []struct {
		name    string
		flag    string
		nodeIPs []string
		hostIP  func() net.IP
		want    string
		wantErr error
	}{
		{"the host's address", "", nil, host("192.0.2.7"), "192.0.2.7", nil},
		{"--advertise-address first", "10.0.0.1", []string{"10.0.0.2"}, host("192.0.2.7"), "10.0.0.1", nil},
		{"else the first --node-ip", "", []string{"10.0.0.2", "10.0.0.3"}, host("192.0.2.7"), "10.0.0.2", nil},
		{"only loopback on the host", "", nil, host("127.0.0.1"), "", errOnlyLoopback},
		{"no address at all", "", nil, func() net.IP { return nil }, "", errOnlyLoopback},
		{"IPv6 loopback", "", nil, host("::1"), "", errOnlyLoopback},
		{"loopback given: taken as it is", "127.0.0.1", nil, host("127.0.0.1"), "127.0.0.1", nil},
		{"loopback --node-ip given", "", []string{"127.0.0.1"}, host("127.0.0.1"), "127.0.0.1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodeIPs []net.IP
			for _, s := range tc.nodeIPs {
				nodeIPs = append(nodeIPs, net.ParseIP(s))
			}
			got, err := chooseAdvertise(tc.flag, nodeIPs, tc.hostIP)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.want != "" && !got.Equal(net.ParseIP(tc.want)) {
				t.Errorf("advertise = %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := chooseAdvertise("not-an-ip", nil, host("192.0.2.7")); err == nil {
		t.Error("--advertise-address not-an-ip was accepted")
	}
	want := "orch server: no usable address: the host has only loopback; pass --node-ip / --advertise-address or bring up an interface"
	if errOnlyLoopback.Error() != want {
		t.Errorf("the error says %q, want %q", errOnlyLoopback, want)
	}
}
