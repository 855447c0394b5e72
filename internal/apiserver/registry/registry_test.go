package registry

import (
	"strings"
	"testing"
)

func TestIPName(t *testing.T) {
	tests := []struct {
		name string
		want string // part of the one message; "" for none
	}{
		{"255.255.255.255", ""},
		{"fe80::42:1dff:fe84:f9e2", ""},
		{"10.43.0.1", ""},
		{"", "must be a valid IP address"},
		{"my-service", "must be a valid IP address"},
		{"10.43.0.0/16", "must be a valid IP address"},
		{"010.043.000.001", "must not have leading 0s"},
		{"FE80::1", "must be in canonical form (\"fe80::1\")"},
		{"2001:db8:0:0::1", "must be in canonical form (\"2001:db8::1\")"},
		{"::ffff:10.43.0.1", "must not be an IPv4-mapped IPv6 address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := IPName(tt.name, false)
			switch {
			case tt.want == "" && len(msgs) > 0:
				t.Errorf("IPName(%q) = %q, want none", tt.name, msgs)
			case tt.want != "" && (len(msgs) != 1 || !strings.Contains(msgs[0], tt.want)):
				t.Errorf("IPName(%q) = %q, want one containing %q", tt.name, msgs, tt.want)
			}
		})
	}
}
