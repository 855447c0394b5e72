package network

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"orch/internal/goldentest"
	"orch/internal/kubelet/containerd/payload"
)

func TestBridgeConfListGolden(t *testing.T) {
	for _, tc := range []struct {
		golden   string
		podCIDRs []string
		opts     BridgeOptions
	}{
		{"bridge-defaults.json", []string{"10.42.3.0/24"}, BridgeOptions{}},
		{"bridge-options.json", []string{"10.244.7.0/24"}, BridgeOptions{NetworkName: "pods", Bridge: "orch-test0", MTU: 1400, IPAMDataDir: "/var/lib/orch/agent/cni/networks"}},
		{"bridge-ipv6.json", []string{"fd00:42:3::/64"}, BridgeOptions{MTU: 1450}},
		{"bridge-dual.json", []string{"10.42.3.0/24", "fd00:42:0:3::/64"}, BridgeOptions{MTU: 1450}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := BridgeConfList(tc.podCIDRs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			goldentest.Check(t, filepath.Join("testdata", tc.golden), got)
		})
	}
}

// TestBridgeConfListFields reads the conflist back as the plugins do.
func TestBridgeConfListFields(t *testing.T) {
	data, err := BridgeConfList([]string{"10.42.3.0/24"}, BridgeOptions{MTU: 1400})
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string
		Name       string
		Plugins    []map[string]any
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.CNIVersion != "1.0.0" || conf.Name != "orch" || len(conf.Plugins) != 2 {
		t.Fatalf("conflist %s", data)
	}
	br, pm := conf.Plugins[0], conf.Plugins[1]
	if br["type"] != "bridge" || br["bridge"] != "orch0" || br["isGateway"] != true || br["ipMasq"] != false ||
		br["hairpinMode"] != true || br["mtu"] != 1400.0 {
		t.Errorf("bridge plugin %v", br)
	}
	ipam := br["ipam"].(map[string]any)
	ranges, _ := json.Marshal(ipam["ranges"])
	routes, _ := json.Marshal(ipam["routes"])
	if ipam["type"] != "host-local" || string(ranges) != `[[{"gateway":"10.42.3.1","subnet":"10.42.3.0/24"}]]` ||
		string(routes) != `[{"dst":"0.0.0.0/0"}]` {
		t.Errorf("ipam %v", ipam)
	}
	if _, ok := ipam["dataDir"]; ok {
		t.Errorf("ipam has a dataDir when none was given: %v", ipam)
	}
	caps, _ := json.Marshal(pm["capabilities"])
	if pm["type"] != "portmap" || string(caps) != `{"portMappings":true}` || pm["snat"] != true {
		t.Errorf("portmap plugin %v", pm)
	}
}

func TestBridgeConfListErrors(t *testing.T) {
	for _, tc := range []struct {
		podCIDR string
		opts    BridgeOptions
		want    string
	}{
		{"", BridgeOptions{}, "not a CIDR"},
		{"10.42.3.0", BridgeOptions{}, "not a CIDR"},
		{"10.42.3.7/24", BridgeOptions{}, "host bits set; want its network address, 10.42.3.0/24"},
		{"10.42.3.0/31", BridgeOptions{}, "no room"},
		{"10.42.3.4/32", BridgeOptions{}, "no room"},
		{"::ffff:10.42.3.0/120", BridgeOptions{}, "IPv4-mapped"},
		{"10.42.3.0/24", BridgeOptions{Bridge: "a-very-long-bridge"}, "not a valid interface name"},
		{"10.42.3.0/24", BridgeOptions{Bridge: "a/b"}, "not a valid interface name"},
		{"10.42.3.0/24", BridgeOptions{MTU: 100}, "MTU 100 is out of range"},
		{"10.42.3.0/24", BridgeOptions{MTU: 70000}, "MTU 70000 is out of range"},
	} {
		_, err := BridgeConfList([]string{tc.podCIDR}, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("BridgeConfList(%q, %+v) = %v, want an error with %q", tc.podCIDR, tc.opts, err, tc.want)
		}
	}
	for _, cidrs := range [][]string{nil, {"10.42.3.0/24", "10.42.4.0/24"}, {"fd00::/64", "fd01::/64"}, {"10.42.3.0/24", "fd00::/64", "fd01::/64"}} {
		if _, err := BridgeConfList(cidrs, BridgeOptions{}); err == nil {
			t.Errorf("BridgeConfList(%q): no error; want one pod CIDR or one of each family", cidrs)
		}
	}
	// The smallest that works: a gateway and one pod.
	if _, err := BridgeConfList([]string{"10.42.3.4/30"}, BridgeOptions{}); err != nil {
		t.Errorf("/30: %v", err)
	}
}

func TestDefaultRouteInterface(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	for _, tc := range []struct{ name, table, want string }{
		{"one", header +
			"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
			"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", "eth0"},
		{"lowest metric wins", header +
			"wlan0\t00000000\t010200C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n" +
			"eth1\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth1"},
		{"not up", header + "eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", ""},
		{"no default", header + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
		{"empty", "", ""},
	} {
		if got := defaultRouteInterface(bufio.NewScanner(strings.NewReader(tc.table))); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDefaultMTU(t *testing.T) {
	mtu := DefaultMTU()
	if mtu < 576 || mtu > 65535 {
		t.Fatalf("DefaultMTU() = %d", mtu)
	}
	f, err := os.Open("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if name := defaultRouteInterface(bufio.NewScanner(f)); name != "" {
		out, err := exec.Command("cat", "/sys/class/net/"+name+"/mtu").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(mtu) {
			t.Errorf("DefaultMTU() = %d, but %s has MTU %s", mtu, name, got)
		}
	} else if mtu != DefaultMTUValue {
		t.Errorf("no default route, DefaultMTU() = %d, want %d", mtu, DefaultMTUValue)
	}
}

// TestPluginsSpeakTheConfListVersion asks the plugins orch carries (CNI
// VERSION command) whether they support CNIVersion.
func TestPluginsSpeakTheConfListVersion(t *testing.T) {
	bin, _, err := payload.Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback", "bandwidth", "firewall"} {
		path := filepath.Join(bin, plugin)
		cmd := exec.Command(path)
		cmd.Env = []string{"CNI_COMMAND=VERSION"}
		cmd.Stdin = strings.NewReader(`{"cniVersion":"` + CNIVersion + `"}`)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s VERSION: %v", plugin, err)
		}
		var v struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s VERSION: %q: %v", plugin, out, err)
		}
		if !slices.Contains(v.SupportedVersions, CNIVersion) {
			t.Errorf("%s supports %q, not %s", plugin, v.SupportedVersions, CNIVersion)
		}
	}
}
