package server

import (
	"slices"
	"testing"
)

// TestDisabledManifests: the built-in "gateway" manifest is off unless
// --gateway-api; --disable adds to that without being changed.
func TestDisabledManifests(t *testing.T) {
	disable := make([]string, 1, 4)
	disable[0] = "ingress"
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{"gateway"}},
		{Config{Disable: disable}, []string{"ingress", "gateway"}},
		{Config{Disable: disable, GatewayAPI: true}, []string{"ingress"}},
		{Config{GatewayAPI: true}, nil},
	} {
		if got := tc.cfg.disabledManifests(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: disabled %v, want %v", tc.cfg, got, tc.want)
		}
	}
	if len(disable) != 1 || cap(disable) != 4 || disable[:2][1] != "" {
		t.Errorf("the --disable list was written to: %v", disable[:2])
	}
}
