package network

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// CNIVersion is the CNI spec version of the conflist. The plugins orch
// carries (1.10) and containerd 2.4 speak it, as did Debian 12's plugins
// 1.1.1 and containerd 1.6 (libcni 1.1) for a runtime brought with
// --container-runtime-endpoint.
const CNIVersion = "1.0.0"

// Defaults of BridgeOptions.
const (
	DefaultNetworkName = "orch"
	DefaultBridgeName  = "orch0"
	DefaultMTUValue    = 1500
)

// BridgeOptions are the settable parts of the pod network's conflist.
// Zero values take the defaults.
type BridgeOptions struct {
	NetworkName string // the CNI network name (DefaultNetworkName)
	Bridge      string // the Linux bridge (DefaultBridgeName); at most 15 bytes
	MTU         int    // of the bridge and the pods' interfaces (DefaultMTUValue; see DefaultMTU)
	// IPAMDataDir is where host-local records the addresses it gave out;
	// empty leaves host-local's default, /var/lib/cni/networks. Agents
	// that share a file system (several nodes on one machine) need their
	// own.
	IPAMDataDir string
}

// The conflist, in the order the plugins run.
type confList struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgeConf struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	IsGateway   bool     `json:"isGateway"`
	IPMasq      bool     `json:"ipMasq"`
	HairpinMode bool     `json:"hairpinMode"`
	MTU         int      `json:"mtu"`
	IPAM        ipamConf `json:"ipam"`
}

type ipamConf struct {
	Type    string        `json:"type"`
	DataDir string        `json:"dataDir,omitempty"`
	Ranges  [][]rangeConf `json:"ranges"`
	Routes  []routeConf   `json:"routes"`
}

type rangeConf struct {
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway"`
}

type routeConf struct {
	Dst string `json:"dst"`
}

type portmapConf struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         bool            `json:"snat"`
}

// BridgeConfList returns the CNI conflist of the node's pod network on
// podCIDRs (e.g. "10.42.3.0/24", or that and "fd00:42:0:3::/64" on a
// dual-stack node): a bridge with host-local IPAM, a range per family (so
// a pod gets an address of each) with the gateway on its first address,
// a default route per family, and portmap. Each podCIDR must be a network
// address (no host bits) with room for the gateway and pods.
func BridgeConfList(podCIDRs []string, opts BridgeOptions) ([]byte, error) {
	if len(podCIDRs) == 0 || len(podCIDRs) > 2 {
		return nil, fmt.Errorf("network: want one pod CIDR, or two of different families; got %q", podCIDRs)
	}
	var ranges [][]rangeConf
	var routes []routeConf
	families := map[bool]bool{}
	for _, podCIDR := range podCIDRs {
		prefix, err := checkPodCIDR(podCIDR)
		if err != nil {
			return nil, err
		}
		if families[prefix.Addr().Is4()] {
			return nil, fmt.Errorf("network: pod CIDRs %q are of one family; want one IPv4 and one IPv6", podCIDRs)
		}
		families[prefix.Addr().Is4()] = true
		ranges = append(ranges, []rangeConf{{Subnet: prefix.String(), Gateway: prefix.Addr().Next().String()}})
		dst := "0.0.0.0/0"
		if prefix.Addr().Is6() {
			dst = "::/0"
		}
		routes = append(routes, routeConf{Dst: dst})
	}
	if opts.NetworkName == "" {
		opts.NetworkName = DefaultNetworkName
	}
	if opts.Bridge == "" {
		opts.Bridge = DefaultBridgeName
	}
	if len(opts.Bridge) > 15 || strings.ContainsAny(opts.Bridge, "/ \t\n") {
		return nil, fmt.Errorf("network: bridge name %q is not a valid interface name (at most 15 bytes, no '/' or spaces)", opts.Bridge)
	}
	if opts.MTU == 0 {
		opts.MTU = DefaultMTUValue
	}
	if opts.MTU < 576 || opts.MTU > 65535 {
		return nil, fmt.Errorf("network: MTU %d is out of range (576 to 65535)", opts.MTU)
	}
	conf := confList{
		CNIVersion: CNIVersion,
		Name:       opts.NetworkName,
		Plugins: []any{
			bridgeConf{
				Type:        "bridge",
				Bridge:      opts.Bridge,
				IsGateway:   true,
				IPMasq:      false,
				HairpinMode: true,
				MTU:         opts.MTU,
				IPAM: ipamConf{
					Type:    "host-local",
					DataDir: opts.IPAMDataDir,
					Ranges:  ranges,
					Routes:  routes,
				},
			},
			portmapConf{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// checkPodCIDR parses one pod CIDR and says what is wrong with it.
func checkPodCIDR(podCIDR string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return prefix, fmt.Errorf("network: pod CIDR %q is not a CIDR (e.g. 10.42.0.0/24): %w", podCIDR, err)
	}
	if prefix.Masked() != prefix {
		return prefix, fmt.Errorf("network: pod CIDR %q has host bits set; want its network address, %s", podCIDR, prefix.Masked())
	}
	if prefix.Addr().BitLen()-prefix.Bits() < 2 {
		return prefix, fmt.Errorf("network: pod CIDR %q leaves no room for a gateway and pods; want a /30 or larger (a node gets a /24)", podCIDR)
	}
	if prefix.Addr().Is4In6() {
		return prefix, fmt.Errorf("network: pod CIDR %q is an IPv4-mapped IPv6 prefix; write it as IPv4", podCIDR)
	}
	return prefix, nil
}

// DefaultMTU is the MTU of the interface that holds the host's IPv4
// default route, or DefaultMTUValue when there is none (or it cannot be
// read).
func DefaultMTU() int {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return DefaultMTUValue
	}
	defer f.Close()
	iface := defaultRouteInterface(bufio.NewScanner(f))
	if iface == "" {
		return DefaultMTUValue
	}
	link, err := net.InterfaceByName(iface)
	if err != nil || link.MTU <= 0 {
		return DefaultMTUValue
	}
	return link.MTU
}

// PodMTU is the MTU of the pods' interfaces on a node at nodeIP with
// backend: the MTU of the interface holding nodeIP (which carries traffic
// to the other nodes; DefaultMTU when no interface holds it) less what
// the backend's encapsulation takes.
func PodMTU(nodeIP net.IP, backend string) int {
	mtu := DefaultMTU()
	if ifaces, err := net.Interfaces(); err == nil {
		for _, iface := range ifaces {
			addrs, _ := iface.Addrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.Equal(nodeIP) && iface.MTU > 0 {
					mtu = iface.MTU
				}
			}
		}
	}
	return mtu - MTUOverhead(backend)
}

// defaultRouteInterface reads /proc/net/route and returns the interface of
// the default route with the lowest metric ("" when there is none).
func defaultRouteInterface(s *bufio.Scanner) string {
	best, bestMetric := "", -1
	for first := true; s.Scan(); first = false {
		f := strings.Fields(s.Text())
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if first || len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		var flags, metric int
		if _, err := fmt.Sscanf(f[3]+" "+f[6], "%x %d", &flags, &metric); err != nil || flags&0x1 == 0 { // RTF_UP
			continue
		}
		if bestMetric < 0 || metric < bestMetric {
			best, bestMetric = f[0], metric
		}
	}
	return best
}
