package network

import (
	"errors"
	"fmt"
	"log/slog"

	"orch/internal/iptsync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// CleanupRoutes removes what the Router made in the calling thread's
// network namespace: the VXLAN device (and with it its neighbour and FDB
// entries), every route with RouteProtocol in any table, and the
// iptables and ip6tables chains ORCH-POSTROUTING and ORCH-FORWARD with the jumps to
// them. It leaves the sysctls as they are (others may need forwarding)
// and everything that is not orch's. What is already gone is skipped, so
// it can run any number of times; log nil means slog.Default().
func CleanupRoutes(log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "routes")
	nl := &netlink.Handle{}
	var errs []error
	if err := deleteVXLANDevice(nl); err != nil {
		errs = append(errs, err)
	}
	routes, err := listOwnRoutes(nl, unix.RT_TABLE_UNSPEC)
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range routes {
		if err := nl.RouteDel(&r); err != nil {
			errs = append(errs, fmt.Errorf("network: delete route %s via %s: %w", r.Dst, r.Gw, err))
		}
	}
	for _, v4 := range []bool{true, false} {
		if !v4 && iptsync.NoIPv6() {
			continue
		}
		ipt, _, err := newIPTables(v4)
		if err != nil {
			log.Info("no iptables here, so no iptables rules of orch's to remove", "err", err)
		} else if err := deleteChains(ipt, masqChains("0.0.0.0/0", false)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("network: cleaning up the routes between nodes: %w", err)
	}
	log.Info("removed the routes between nodes, the VXLAN device and orch's iptables chains", "routes", len(routes))
	return nil
}
