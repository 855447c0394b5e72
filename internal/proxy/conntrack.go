package proxy

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// udpState is, for every UDP service port, where its traffic arrives
// (frontends: cluster IP, external IPs and load-balancer IPs with the
// port, and the NodePort) and the serving endpoints behind it. Conntrack
// entries of a UDP frontend that are not DNATed to one of its serving
// endpoints are stale: left, they keep sending a client's packets to an
// endpoint that went away, or past the REJECT rule of a service that had
// no endpoints when the flow began.
type udpState struct {
	frontends map[string]map[string]bool // "ip:port" → serving "ip:port"
	nodePorts map[int]map[string]bool    // NodePort → serving "ip:port" (only when some)
}

func newUDPState() udpState {
	return udpState{frontends: map[string]map[string]bool{}, nodePorts: map[int]map[string]bool{}}
}

func (u udpState) add(sp *servicePort, eps []endpoint) {
	if sp.protocol != "udp" {
		return
	}
	serving := map[string]bool{}
	for _, e := range eps {
		if e.serving {
			serving[e.String()] = true
		}
	}
	port := strconv.Itoa(sp.port)
	for _, ip := range append(append([]string{sp.clusterIP}, sp.externalIPs...), sp.lbIPs...) {
		u.frontends[net.JoinHostPort(ip, port)] = serving
	}
	// Matching on the port alone, a NodePort without endpoints would catch
	// unrelated flows; as upstream, leave those.
	if sp.nodePort != 0 && len(serving) > 0 {
		u.nodePorts[sp.nodePort] = serving
	}
}

// staleFilter selects the UDP frontends whose conntrack entries must be
// checked after a sync: those whose serving endpoints lost a member, or
// that had none and now have some. It returns nil when there is nothing to
// delete.
func staleFilter(prev, next udpState) *flowFilter {
	f := &flowFilter{frontends: map[string]map[string]bool{}, nodePorts: map[int]map[string]bool{}}
	for k, now := range next.frontends {
		if lostOrGained(prev.frontends[k], now) { // a new frontend counts as one that had none
			f.frontends[k] = now
		}
	}
	for k, before := range prev.frontends {
		if _, ok := next.frontends[k]; !ok && len(before) > 0 {
			f.frontends[k] = map[string]bool{} // service gone: nothing serves it
		}
	}
	for p, now := range next.nodePorts {
		if before, ok := prev.nodePorts[p]; !ok || lostOrGained(before, now) {
			f.nodePorts[p] = now
		}
	}
	if len(f.frontends) == 0 && len(f.nodePorts) == 0 {
		return nil
	}
	return f
}

// lostOrGained: an endpoint went away, or the set went from empty to not.
func lostOrGained(before, now map[string]bool) bool {
	if len(before) == 0 {
		return len(now) > 0
	}
	for e := range before {
		if !now[e] {
			return true
		}
	}
	return false
}

// flowFilter is a netlink.CustomConntrackFilter matching the UDP entries
// that go to a frontend of the filter but come back from another source
// than one of its serving endpoints.
type flowFilter struct {
	frontends map[string]map[string]bool
	nodePorts map[int]map[string]bool
}

var _ netlink.CustomConntrackFilter = (*flowFilter)(nil)

// MatchConntrackFlow implements netlink.CustomConntrackFilter.
func (f *flowFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	reply := net.JoinHostPort(flow.Reverse.SrcIP.String(), strconv.Itoa(int(flow.Reverse.SrcPort)))
	if eps, ok := f.frontends[net.JoinHostPort(flow.Forward.DstIP.String(), strconv.Itoa(int(flow.Forward.DstPort)))]; ok {
		return !eps[reply]
	}
	if eps, ok := f.nodePorts[int(flow.Forward.DstPort)]; ok {
		return !eps[reply]
	}
	return false
}

// String lists the frontends, for logs.
func (f *flowFilter) String() string {
	var out []string
	for k := range f.frontends {
		out = append(out, k)
	}
	for p := range f.nodePorts {
		out = append(out, "*:"+strconv.Itoa(p))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// conntrackCleaner deletes conntrack entries.
type conntrackCleaner interface {
	DeleteFlows(f netlink.CustomConntrackFilter) (uint, error)
}

// netlinkConntrack deletes entries of one family (unix.AF_INET or
// AF_INET6: the kernel keeps each family's entries apart) through
// netlink, in the current network namespace.
type netlinkConntrack struct{ family netlink.InetFamily }

func (c netlinkConntrack) DeleteFlows(f netlink.CustomConntrackFilter) (uint, error) {
	return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, c.family, f)
}

// udpCleaner deletes, after each sync, the conntrack entries of UDP
// traffic that the new rules send elsewhere (staleFilter). It keeps the
// UDP state of the last sync whose entries it could clean.
type udpCleaner struct {
	ct   conntrackCleaner // nil: no clean-up
	prev udpState
}

func (c *udpCleaner) synced(next udpState) (uint, error) {
	f := staleFilter(c.prev, next)
	if f == nil || c.ct == nil {
		c.prev = next
		return 0, nil
	}
	n, err := c.ct.DeleteFlows(f)
	if err != nil {
		// Keep the old UDP state: the next sync tries these again.
		return 0, fmt.Errorf("proxy: rules are written but deleting stale UDP conntrack entries of %s failed: %w", f, err)
	}
	c.prev = next
	return n, nil
}
