package network

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/coreos/go-iptables/iptables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// hostDataplane applies plans to the host's network namespace (that of the
// calling thread) through rtnetlink, /proc/sys and iptables.
type hostDataplane struct {
	cfg         RouteConfig
	clusters    []*net.IPNet // one per family
	log         *slog.Logger
	nl          *netlink.Handle
	settings    hostSettings
	ipt         map[bool]iptablesRunner // by family (true: IPv4), made at the first apply
	randomFully bool
	warned      map[string]bool // warnings of the last apply
	warnNow     map[string]bool
}

var (
	_ dataplane      = (*hostDataplane)(nil)
	_ iptablesRunner = (*iptables.IPTables)(nil)
)

func newHostDataplane(cfg RouteConfig, clusters []*net.IPNet, log *slog.Logger) *hostDataplane {
	settings := newHostSettings(log)
	for _, c := range clusters {
		settings.ipv6 = settings.ipv6 || c.IP.To4() == nil
	}
	return &hostDataplane{cfg: cfg, clusters: clusters, log: log, nl: &netlink.Handle{},
		settings: settings, warned: map[string]bool{}}
}

// newIPTables is iptables (v4) or ip6tables, and whether it has
// --random-fully.
func newIPTables(v4 bool) (iptablesRunner, bool, error) {
	proto, name := iptables.ProtocolIPv4, "iptables"
	if !v4 {
		proto, name = iptables.ProtocolIPv6, "ip6tables"
	}
	ipt, err := iptables.New(iptables.IPFamily(proto))
	if err != nil {
		return nil, false, fmt.Errorf("network: %s: %w (install the iptables package)", name, err)
	}
	return ipt, ipt.HasRandomFully(), nil
}

// warn logs msg unless the last apply logged it too.
func (d *hostDataplane) warn(msg string, args ...any) {
	key := fmt.Sprint(msg, args)
	d.warnNow[key] = true
	if !d.warned[key] {
		d.log.Warn(msg, args...)
	}
}

func (d *hostDataplane) apply(p routePlan) (err error) {
	d.warnNow = map[string]bool{}
	defer func() {
		if err != nil { // an apply cut short: keep what was warned about
			for k := range d.warned {
				d.warnNow[k] = true
			}
		}
		d.warned = d.warnNow
	}()
	warning, err := d.settings.ensure()
	if err != nil {
		return err
	}
	if warning != "" {
		d.warn(warning)
	}
	if d.ipt == nil {
		d.ipt = map[bool]iptablesRunner{}
		d.randomFully = true
		for _, c := range d.clusters {
			ipt, randomFully, err := newIPTables(c.IP.To4() != nil)
			if err != nil {
				d.ipt = nil
				return err
			}
			d.ipt[c.IP.To4() != nil] = ipt
			d.randomFully = d.randomFully && randomFully
		}
		if !d.randomFully {
			d.warn("iptables has no --random-fully; masquerading without it")
		}
	}
	for _, c := range d.clusters {
		if changed, err := ensureChains(d.ipt[c.IP.To4() != nil], masqChains(c.String(), d.randomFully)); err != nil {
			return err
		} else if changed {
			d.log.Info("wrote iptables rules", "nat", MasqChain, "filter", ForwardChain, "clusterCIDR", c.String())
		}
	}

	var routes []netlink.Route
	switch p.Backend {
	case BackendHostGW:
		if err := d.deleteVXLAN(); err != nil {
			return err
		}
		routes = d.hostGWRoutes(p)
	case BackendVXLAN:
		link, err := d.ensureVXLAN(p.LocalPodCIDR)
		if err != nil {
			return err
		}
		if err := d.syncFDB(link, p.FDB); err != nil {
			return err
		}
		if err := d.syncNeighs(link, p.Neighs); err != nil {
			return err
		}
		for _, r := range p.Routes {
			routes = append(routes, netlink.Route{LinkIndex: link, Dst: r.Dst, Gw: r.Gw, Flags: int(netlink.FLAG_ONLINK)})
		}
	default:
		return fmt.Errorf("network: unknown backend %q", p.Backend)
	}
	return d.syncRoutes(routes)
}

// hostGWRoutes are the routes to the peers' podCIDRs via their node IPs,
// on the interfaces that reach those directly. Peers that are not on a
// directly connected subnet are skipped with a warning.
func (d *hostDataplane) hostGWRoutes(p routePlan) []netlink.Route {
	var out []netlink.Route
	for _, r := range p.Routes {
		name := r.Peer
		got, err := d.nl.RouteGet(r.Gw)
		if err == nil && len(got) > 0 && got[0].Gw == nil && got[0].LinkIndex > 0 {
			out = append(out, netlink.Route{LinkIndex: got[0].LinkIndex, Dst: r.Dst, Gw: r.Gw})
			continue
		}
		how := "it is reached through a gateway"
		if err != nil || len(got) == 0 {
			how = fmt.Sprintf("no route to it: %v", err)
		}
		d.warn("host-gw cannot route to this node's pods: its IP is not on a directly connected subnet of this node ("+how+"); use the vxlan backend, which works across routed networks",
			"peer", name, "peerIP", r.Gw.String(), "podCIDR", r.Dst.String())
	}
	return out
}

// syncRoutes makes orch's routes (RouteProtocol, main table) exactly want.
func (d *hostDataplane) syncRoutes(want []netlink.Route) error {
	for i := range want {
		want[i].Protocol = RouteProtocol
		want[i].Table = unix.RT_TABLE_MAIN
	}
	have, err := listOwnRoutes(d.nl, unix.RT_TABLE_MAIN)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range have {
		if !containsRoute(want, h) {
			if err := d.nl.RouteDel(&h); err != nil {
				errs = append(errs, fmt.Errorf("network: delete route %s via %s: %w", h.Dst, h.Gw, err))
				continue
			}
			d.log.Info("deleted route", "dst", h.Dst.String(), "via", h.Gw.String())
		}
	}
	for _, w := range want {
		if containsRoute(have, w) {
			continue
		}
		if err := d.nl.RouteReplace(&w); err != nil {
			errs = append(errs, fmt.Errorf("network: add route %s via %s: %w", w.Dst, w.Gw, err))
			continue
		}
		d.log.Info("added route", "dst", w.Dst.String(), "via", w.Gw.String(), "onlink", w.Flags&int(netlink.FLAG_ONLINK) != 0)
	}
	return errors.Join(errs...)
}

// listOwnRoutes lists the routes (IPv4 and IPv6) with RouteProtocol in
// table (unix.RT_TABLE_UNSPEC: in all tables).
func listOwnRoutes(nl *netlink.Handle, table int) ([]netlink.Route, error) {
	routes, err := nl.RouteListFiltered(netlink.FAMILY_ALL,
		&netlink.Route{Protocol: RouteProtocol, Table: table}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("network: list routes: %w", err)
	}
	return routes, nil
}

// containsRoute: whether routes has one to r's destination via r's gateway
// on r's link, with the same onlink flag.
func containsRoute(routes []netlink.Route, r netlink.Route) bool {
	for _, x := range routes {
		if x.Dst != nil && r.Dst != nil && x.Dst.String() == r.Dst.String() && x.Gw.Equal(r.Gw) &&
			x.LinkIndex == r.LinkIndex && x.Flags&int(netlink.FLAG_ONLINK) == r.Flags&int(netlink.FLAG_ONLINK) {
			return true
		}
	}
	return false
}
