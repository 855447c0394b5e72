package network

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostLocalAddressesPrefer(t *testing.T) {
	dir := t.TempDir()
	h := &HostLocalAddresses{Dir: dir}
	last := func() string {
		data, _ := os.ReadFile(filepath.Join(dir, "last_reserved_ip.0"))
		return string(data)
	}
	// A free address: host-local's next one becomes it.
	h.Prefer([]string{"fd00::5", "10.42.0.7"})()
	if got := last(); got != "10.42.0.6" {
		t.Fatalf("last_reserved_ip.0 = %q, want 10.42.0.6", got)
	}
	// A taken one, or none: the file is left alone.
	os.WriteFile(filepath.Join(dir, "10.42.0.9"), []byte("other-container"), 0o644)
	h.Prefer([]string{"10.42.0.9"})()
	h.Prefer(nil)()
	h.Prefer([]string{"not an address", "0.0.0.0"})()
	if got := last(); got != "10.42.0.6" {
		t.Fatalf("last_reserved_ip.0 = %q after taken and missing addresses, want it unchanged", got)
	}
}
