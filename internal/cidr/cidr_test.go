package cidr

import "testing"

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
