package network

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// nodeIPLink is the interface that holds ip.
func nodeIPLink(nl *netlink.Handle, ip net.IP) (netlink.Link, error) {
	addrs, err := nl.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("network: list addresses: %w", err)
	}
	for _, a := range addrs {
		if a.IP.Equal(ip) {
			return nl.LinkByIndex(a.LinkIndex)
		}
	}
	return nil, fmt.Errorf("network: node IP %s is on no interface of this host; set --node-ip to one of this host's addresses (the one other nodes reach it on)", ip)
}

// wantVXLAN is the VXLAN device of cfg over the interface parent.
func wantVXLAN(cfg RouteConfig, parent netlink.Link) *netlink.Vxlan {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = VXLANDevice
	attrs.MTU = parent.Attrs().MTU - vxlanOverhead
	attrs.HardwareAddr = vxlanMAC(cfg.NodeIP)
	return &netlink.Vxlan{LinkAttrs: attrs, VxlanId: cfg.VNI, VtepDevIndex: parent.Attrs().Index,
		SrcAddr: cfg.NodeIP, Port: cfg.VXLANPort, Learning: false}
}

// sameVXLAN: whether have can stay as it is apart from MTU and MAC (which
// can change in place).
func sameVXLAN(have, want *netlink.Vxlan) bool {
	return have.VxlanId == want.VxlanId && have.Port == want.Port && have.SrcAddr.Equal(want.SrcAddr) &&
		have.VtepDevIndex == want.VtepDevIndex && !have.Learning
}

// ensureVXLAN makes orch.vxlan exist as configured, up, with the local
// podCIDR's network address as its only address, and returns its index.
func (d *hostDataplane) ensureVXLAN(podCIDR *net.IPNet) (int, error) {
	parent, err := nodeIPLink(d.nl, d.cfg.NodeIP)
	if err != nil {
		return 0, err
	}
	want := wantVXLAN(d.cfg, parent)
	link, err := d.nl.LinkByName(VXLANDevice)
	var notFound netlink.LinkNotFoundError
	if err == nil {
		if have, ok := link.(*netlink.Vxlan); !ok || !sameVXLAN(have, want) {
			d.log.Info("recreating the VXLAN device: its settings differ", "device", VXLANDevice)
			if err := d.nl.LinkDel(link); err != nil {
				return 0, fmt.Errorf("network: delete %s to recreate it: %w", VXLANDevice, err)
			}
			link = nil
		}
	} else if !errors.As(err, &notFound) {
		return 0, fmt.Errorf("network: look up %s: %w", VXLANDevice, err)
	} else {
		link = nil
	}
	if link == nil {
		if err := d.nl.LinkAdd(want); err != nil {
			return 0, fmt.Errorf("network: add VXLAN device %s (VNI %d, port %d, over %s): %w", VXLANDevice, want.VxlanId, want.Port, parent.Attrs().Name, err)
		}
		d.log.Info("added the VXLAN device", "device", VXLANDevice, "vni", want.VxlanId, "port", want.Port,
			"local", want.SrcAddr.String(), "dev", parent.Attrs().Name, "mtu", want.MTU, "mac", want.HardwareAddr.String())
		if link, err = d.nl.LinkByName(VXLANDevice); err != nil {
			return 0, fmt.Errorf("network: look up %s: %w", VXLANDevice, err)
		}
	}
	if link.Attrs().MTU != want.MTU {
		if err := d.nl.LinkSetMTU(link, want.MTU); err != nil {
			return 0, fmt.Errorf("network: set the MTU of %s to %d: %w", VXLANDevice, want.MTU, err)
		}
	}
	if !bytes.Equal(link.Attrs().HardwareAddr, want.HardwareAddr) {
		if err := d.nl.LinkSetHardwareAddr(link, want.HardwareAddr); err != nil {
			return 0, fmt.Errorf("network: set the MAC of %s to %s: %w", VXLANDevice, want.HardwareAddr, err)
		}
	}
	if err := d.syncVXLANAddr(link, podCIDR); err != nil {
		return 0, err
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		if err := d.nl.LinkSetUp(link); err != nil {
			return 0, fmt.Errorf("network: set %s up: %w", VXLANDevice, err)
		}
	}
	return link.Attrs().Index, nil
}

// syncVXLANAddr leaves podCIDR's network address /32 as the device's only
// IPv4 address (flannel's way: the address of this node's VTEP, and the
// source of this node's own traffic to other nodes' pods). With no
// podCIDR (this Node not registered yet, or deleted and not registered
// again) the addresses stay as they are: the pods on the node keep their
// network meanwhile.
func (d *hostDataplane) syncVXLANAddr(link netlink.Link, podCIDR *net.IPNet) error {
	if podCIDR == nil {
		return nil
	}
	want := &netlink.Addr{IPNet: &net.IPNet{IP: podCIDR.IP, Mask: net.CIDRMask(32, 32)}}
	addrs, err := d.nl.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("network: list the addresses of %s: %w", VXLANDevice, err)
	}
	found := false
	for _, a := range addrs {
		if a.IPNet.String() == want.IPNet.String() {
			found = true
			continue
		}
		if err := d.nl.AddrDel(link, &a); err != nil {
			return fmt.Errorf("network: delete address %s of %s: %w", a.IPNet, VXLANDevice, err)
		}
	}
	if !found {
		if err := d.nl.AddrAdd(link, want); err != nil {
			return fmt.Errorf("network: add address %s to %s: %w", want.IPNet, VXLANDevice, err)
		}
	}
	return nil
}

// deleteVXLAN removes orch.vxlan (with its routes, neighbours and FDB
// entries) when it is there.
func (d *hostDataplane) deleteVXLAN() error {
	return deleteVXLANDevice(d.nl)
}

func deleteVXLANDevice(nl *netlink.Handle) error {
	link, err := nl.LinkByName(VXLANDevice)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("network: look up %s: %w", VXLANDevice, err)
	}
	if err := nl.LinkDel(link); err != nil {
		return fmt.Errorf("network: delete %s: %w", VXLANDevice, err)
	}
	return nil
}

// syncFDB makes the device's FDB entries with a destination exactly want.
func (d *hostDataplane) syncFDB(link int, want []fdbEntry) error {
	have, err := d.nl.NeighList(link, unix.AF_BRIDGE)
	if err != nil {
		return fmt.Errorf("network: list the FDB of %s: %w", VXLANDevice, err)
	}
	var errs []error
	for _, h := range have {
		if h.IP == nil || containsFDB(want, h.HardwareAddr, h.IP) {
			continue
		}
		h.Family, h.Flags = unix.AF_BRIDGE, netlink.NTF_SELF
		if err := d.nl.NeighDel(&h); err != nil {
			errs = append(errs, fmt.Errorf("network: delete FDB entry %s dst %s: %w", h.HardwareAddr, h.IP, err))
		}
	}
	for _, w := range want {
		if slices.ContainsFunc(have, func(h netlink.Neigh) bool {
			return bytes.Equal(h.HardwareAddr, w.MAC) && h.IP.Equal(w.Dst)
		}) {
			continue
		}
		n := netlink.Neigh{LinkIndex: link, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF,
			State: netlink.NUD_PERMANENT, HardwareAddr: w.MAC, IP: w.Dst}
		if err := d.nl.NeighSet(&n); err != nil {
			errs = append(errs, fmt.Errorf("network: add FDB entry %s dst %s: %w", w.MAC, w.Dst, err))
		}
	}
	return errors.Join(errs...)
}

func containsFDB(want []fdbEntry, mac net.HardwareAddr, dst net.IP) bool {
	for _, w := range want {
		if bytes.Equal(w.MAC, mac) && w.Dst.Equal(dst) {
			return true
		}
	}
	return false
}

// syncNeighs makes the device's permanent neighbours (IPv4 and IPv6)
// exactly want.
func (d *hostDataplane) syncNeighs(link int, want []neighEntry) error {
	have, err := d.nl.NeighList(link, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("network: list the neighbours on %s: %w", VXLANDevice, err)
	}
	have6, err := d.nl.NeighList(link, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("network: list the IPv6 neighbours on %s: %w", VXLANDevice, err)
	}
	have = append(have, have6...)
	var errs []error
	matches := func(h netlink.Neigh, w neighEntry) bool {
		return h.State&netlink.NUD_PERMANENT != 0 && h.IP.Equal(w.IP) && bytes.Equal(h.HardwareAddr, w.MAC)
	}
	for _, h := range have {
		if h.State&netlink.NUD_PERMANENT == 0 || slices.ContainsFunc(want, func(w neighEntry) bool { return matches(h, w) }) {
			continue
		}
		if err := d.nl.NeighDel(&h); err != nil {
			errs = append(errs, fmt.Errorf("network: delete neighbour %s on %s: %w", h.IP, VXLANDevice, err))
		}
	}
	for _, w := range want {
		if slices.ContainsFunc(have, func(h netlink.Neigh) bool { return matches(h, w) }) {
			continue
		}
		family := netlink.FAMILY_V4
		if w.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		n := netlink.Neigh{LinkIndex: link, Family: family, State: netlink.NUD_PERMANENT,
			Type: unix.RTN_UNICAST, IP: w.IP, HardwareAddr: w.MAC}
		if err := d.nl.NeighSet(&n); err != nil {
			errs = append(errs, fmt.Errorf("network: add neighbour %s lladdr %s on %s: %w", w.IP, w.MAC, VXLANDevice, err))
		}
	}
	return errors.Join(errs...)
}
