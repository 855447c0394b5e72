package network

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// HostLocalAddresses steers host-local, the pod network's IPAM, to give a
// pod the IPv4 address it had before, when that address is free: host-local
// hands out the first free address after the one its last_reserved_ip file
// names, so Prefer points that file just before it. A pod whose sandbox is
// made again (after a reboot, with no server to update its Service's
// endpoints) keeps its address, as far as host-local allows.
//
// A preferred sandbox is made alone; others are made together, so none
// takes the address between the file's change and the pod's ADD.
type HostLocalAddresses struct {
	// Dir is host-local's directory of the network:
	// IPAMDataDir/NetworkName.
	Dir string
	mu  sync.RWMutex
}

// Prefer implements pods.AddressPreference.
func (h *HostLocalAddresses) Prefer(ips []string) (done func()) {
	ip, ok := firstIPv4(ips)
	if !ok {
		h.mu.RLock()
		return h.mu.RUnlock
	}
	if _, err := os.Stat(filepath.Join(h.Dir, ip.String())); !errors.Is(err, fs.ErrNotExist) {
		h.mu.RLock() // taken (or unknown): host-local picks another
		return h.mu.RUnlock
	}
	h.mu.Lock()
	if err := h.pointBefore(ip); err != nil {
		h.mu.Unlock()
		h.mu.RLock()
		return h.mu.RUnlock
	}
	return h.mu.Unlock
}

// pointBefore writes host-local's last reserved address of its first
// range set as the one before ip, under host-local's own lock.
func (h *HostLocalAddresses) pointBefore(ip netip.Addr) error {
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(h.Dir, "lock"), os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.Dir, "last_reserved_ip.0"), []byte(ip.Prev().String()), 0o644)
}

func firstIPv4(ips []string) (netip.Addr, bool) {
	for _, s := range ips {
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() && ip.Prev().IsValid() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}
