package proxy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"

	"orch/internal/netnstest"
)

// The kernel tests of the IPv6 family and of both families together, in
// the tests' private network namespace (netnstest), as the IPv4 ones.

// requireIP6Tables skips t unless it may touch the namespace's tables and
// ip6tables is installed.
func requireIP6Tables(t *testing.T) {
	t.Helper()
	requireNetns(t)
	for _, bin := range []string{"ip6tables", "ip6tables-restore", "ip6tables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian: apt-get install iptables)", bin)
		}
	}
}

// saveChains6 parses `ip6tables-save -t table` into chain → rules.
func saveChains6(t testing.TB, table string) map[string][]string {
	t.Helper()
	return netnstest.SaveChainsOf(t, "ip6tables-save", table)
}

// flushEverything empties the namespace's nat and filter tables of both
// families and deletes both nftables tables of the proxy.
func flushEverything(t *testing.T) {
	t.Helper()
	flushAll(t)
	for _, table := range []string{"nat", "filter"} {
		run(t, "ip6tables", "-t", table, "-F")
		run(t, "ip6tables", "-t", table, "-X")
	}
	for _, f := range allFamilies {
		if err := cleanupNFTables(f, quiet); err != nil {
			t.Fatal(err)
		}
	}
}

// newRealSyncer6 is an iptables-mode syncer of the IPv6 family.
func newRealSyncer6(t *testing.T) *syncer {
	t.Helper()
	d, err := newIPTablesDriver(v1.IPv6Protocol)
	if err != nil {
		t.Fatal(err)
	}
	return newSyncer(d, netlinkConntrack{family: unix.AF_INET6}, time.Hour)
}

// ownChains lists the KUBE-* chains and the rules that mention one, in
// every table of save.
func ownChains(save func(testing.TB, string) map[string][]string, t *testing.T) []string {
	var out []string
	for _, table := range []string{"nat", "filter"} {
		for n, rules := range save(t, table) {
			if strings.HasPrefix(n, "KUBE-") {
				out = append(out, table+" chain "+n)
			}
			for _, r := range rules {
				if strings.Contains(r, "KUBE-") && !strings.HasPrefix(n, "KUBE-") {
					out = append(out, table+" rule "+r)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestIP6TablesLifecycle has the real ip6tables-restore take the IPv6
// input's rules, a partial sync change them, and Cleanup remove them,
// leaving another program's IPv6 rules and the IPv4 tables alone.
func TestIP6TablesLifecycle(t *testing.T) {
	requireIP6Tables(t)
	flushEverything(t)
	t.Cleanup(func() { flushEverything(t) })
	run(t, "ip6tables", "-t", "nat", "-A", "POSTROUTING", "-s", "fd99::/64", "-j", "MASQUERADE")

	s := newRealSyncer6(t)
	in := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	if res, err := s.sync(time.Now(), in); err != nil || !res.Full {
		t.Fatalf("full sync: %+v, %v", res, err)
	}
	nat, filter := saveChains6(t, "nat"), saveChains6(t, "filter")
	web := portChainName(prefixSVC, "default/web:http", "tcp")
	for _, c := range []string{chainServices, chainNodePorts, chainPostrouting, chainMarkMasq, web,
		portChainName(prefixFW, "default/lb:http", "tcp"), endpointChainName("default/web:http", "tcp", "[fd00:42:0:1::5]:8080")} {
		if _, ok := nat[c]; !ok {
			t.Errorf("ip6tables-save -t nat lacks %s", c)
		}
	}
	if _, ok := filter[chainFirewall]; ok {
		t.Error("the IPv6 filter table has KUBE-FIREWALL")
	}
	if !slices.ContainsFunc(filter[chainServices], func(r string) bool { return strings.Contains(r, "REJECT --reject-with icmp6-port-unreachable") }) {
		t.Errorf("filter KUBE-SERVICES has no ICMPv6 REJECT rule: %q", filter[chainServices])
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for _, r := range nat[chainServices] {
			if strings.Contains(r, "KUBE-NODEPORTS") && !yield(r) {
				return
			}
		}
	}); len(got) != 1 || !strings.Contains(got[0], "! -d ::1/128") {
		t.Errorf("the jump to KUBE-NODEPORTS does not leave out ::1: %q", got)
	}
	jumps6 := 0
	for _, table := range []string{"nat", "filter"} {
		for _, c := range []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"} {
			for _, r := range saveChains6(t, table)[c] {
				if strings.Contains(r, "-j KUBE-") {
					jumps6++
				}
			}
		}
	}
	if want := len(jumpsOf(true)); jumps6 != want {
		t.Errorf("%d IPv6 jump rules, want %d", jumps6, want)
	}
	if left := ownChains(saveChains, t); len(left) != 0 {
		t.Errorf("the IPv6 sync wrote into the IPv4 tables: %v", left)
	}

	// One endpoint moves: a partial sync rewrites that service's chains.
	moved := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	for _, sl := range moved.Slices {
		if sl.Name == "web-1" {
			sl.Endpoints[0].Addresses = []string{"fd00:42:0:1::55"}
		}
	}
	res, err := s.sync(time.Now(), moved)
	if err != nil || res.Full || res.ChainsWritten != 2 || res.ChainsDeleted != 1 {
		t.Errorf("partial sync: %+v, %v; want 2 chains written and 1 deleted", res, err)
	}
	if _, ok := saveChains6(t, "nat")[endpointChainName("default/web:http", "tcp", "[fd00:42:0:1::55]:8080")]; !ok {
		t.Error("the moved endpoint's chain is not in the kernel")
	}

	if err := Cleanup(quiet); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if left := ownChains(saveChains6, t); len(left) != 0 {
		t.Errorf("left after Cleanup: %v", left)
	}
	if !slices.Contains(saveChains6(t, "nat")["POSTROUTING"], "-A POSTROUTING -s fd99::/64 -j MASQUERADE") {
		t.Error("Cleanup removed another program's IPv6 rule")
	}
}

// TestDualStackKernel writes the dual-stack input in both families and
// both modes; each family's tables hold only its addresses. The switch
// of mode removes the other mode's rules in both families, and Cleanup
// removes everything.
func TestDualStackKernel(t *testing.T) {
	requireIP6Tables(t)
	if _, err := knftables.New(knftables.IPv6Family, nftTable); err != nil {
		t.Skipf("nft is not usable here (Debian: apt-get install nftables): %v", err)
	}
	flushEverything(t)
	t.Cleanup(func() { flushEverything(t) })
	p, err := newProxier(Config{NodeName: testNode, ClusterCIDRs: prefixes(t, testCIDR+","+testCIDR6)}, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	syncAll := func(mode string) {
		t.Helper()
		p.cfg.Mode = mode
		for _, f := range p.families {
			if f.s, err = newModeSyncer(mode, f.family, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.syncFamilies(time.Now(), loadInput(t, "dual-stack")); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
	dumps := func(save func(testing.TB, string) map[string][]string) string {
		var b strings.Builder
		for _, table := range []string{"nat", "filter"} {
			for _, rules := range save(t, table) {
				b.WriteString(strings.Join(rules, "\n") + "\n")
			}
		}
		return b.String()
	}
	checkFamilies := func(what, v4, v6 string) {
		t.Helper()
		if !strings.Contains(v4, "10.43.0.20") || !strings.Contains(v4, "10.43.0.10") || strings.Contains(v4, "fd00:") {
			t.Errorf("%s: the IPv4 rules lack the IPv4 Services or have IPv6 addresses:\n%s", what, v4)
		}
		if !strings.Contains(v6, "fd00:43::30") || !strings.Contains(v6, "fd00:43::10") || strings.Contains(v6, "10.43.") {
			t.Errorf("%s: the IPv6 rules lack the IPv6 Services or have IPv4 addresses:\n%s", what, v6)
		}
	}
	nftTables := func() map[knftables.Family]string {
		out := map[knftables.Family]string{}
		for _, f := range allFamilies {
			if s, err := exec.Command("nft", "list", "table", string(nftFamily(f)), nftTable).Output(); err == nil {
				out[nftFamily(f)] = string(s)
			}
		}
		return out
	}

	syncAll(ModeIPTables)
	checkFamilies("iptables", dumps(saveChains), dumps(saveChains6))

	// To nftables: the iptables rules of both families go.
	p.cfg.Mode = ModeNFTables
	p.removeOtherMode()
	syncAll(ModeNFTables)
	if left := append(ownChains(saveChains, t), ownChains(saveChains6, t)...); len(left) != 0 {
		t.Errorf("iptables rules left after switching to nftables: %v", left)
	}
	tables := nftTables()
	checkFamilies("nftables", tables[knftables.IPv4Family], tables[knftables.IPv6Family])

	// Back to iptables: the nftables tables of both families go.
	p.cfg.Mode = ModeIPTables
	p.removeOtherMode()
	if left := nftTables(); len(left) != 0 {
		t.Errorf("nftables tables left after switching to iptables: %v", left)
	}
	syncAll(ModeIPTables)
	syncAll(ModeNFTables) // rules of both modes, for Cleanup
	if err := Cleanup(quiet); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if left := append(ownChains(saveChains, t), ownChains(saveChains6, t)...); len(left) != 0 {
		t.Errorf("iptables rules left after Cleanup: %v", left)
	}
	if left := nftTables(); len(left) != 0 {
		t.Errorf("nftables tables left after Cleanup: %v", left)
	}
}

// endpointNetns6 gives the endpoint namespace of endpointNetns IPv6
// addresses too: here fd00:42:0:1::1/64, there fd00:42:0:1::5/64 with a
// default route back; the node's IPv6 address on lo (until the test ends).
func endpointNetns6(t *testing.T, pid string) {
	t.Helper()
	run(t, "ip", "-6", "addr", "add", "fd00:42:0:1::1/64", "dev", "orch-h", "nodad")
	run(t, "ip", "-6", "route", "add", "fd00:43::/112", "dev", "orch-h") // the IPv6 service CIDR
	run(t, "ip", "-6", "addr", "add", testNodeIP6.String()+"/128", "dev", "lo")
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", testNodeIP6.String()+"/128", "dev", "lo").Run() })
	in := func(args ...string) { run(t, "nsenter", append([]string{"-t", pid, "-n"}, args...)...) }
	in("ip", "-6", "addr", "add", "fd00:42:0:1::5/64", "dev", "orch-p", "nodad")
	in("ip", "-6", "route", "add", "default", "via", "fd00:42:0:1::1")
}

// trafficInput6 is trafficInput in IPv6: a NodePort service with an
// endpoint in the endpoint namespace, and one without endpoints.
func trafficInput6() Input {
	in := trafficInput()
	in.Family, in.ClusterCIDR, in.NodeIPs = v1.IPv6Protocol, testCIDR6, append(in.NodeIPs, testNodeIP6)
	web, empty := in.Services[0].DeepCopy(), in.Services[1].DeepCopy()
	web.Spec.ClusterIP, empty.Spec.ClusterIP = "fd00:43::10", "fd00:43::11"
	sl := in.Slices[0].DeepCopy()
	sl.AddressType, sl.Endpoints[0].Addresses = "IPv6", []string{"fd00:42:0:1::5"}
	in.Services, in.Slices = []*v1.Service{web, empty}, append(in.Slices[:0:0], sl)
	return in
}

// TestTrafficThroughServiceIPv6 sends HTTP over IPv6 through the rules of
// each mode: to a cluster IP and to a NodePort on the node's address;
// the NodePort does not answer on ::1, and a service without endpoints
// refuses (ICMPv6 port unreachable).
func TestTrafficThroughServiceIPv6(t *testing.T) {
	requireIP6Tables(t)
	flushEverything(t)
	t.Cleanup(func() { flushEverything(t) })
	pid := endpointNetns(t)
	endpointNetns6(t, pid)
	docroot := t.TempDir()
	if err := os.WriteFile(filepath.Join(docroot, "index.html"), []byte("hello over IPv6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("nsenter", "-t", pid, "-n", "busybox", "httpd", "-f", "-p", "[::]:8080", "-h", docroot)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	for i := 0; ; i++ { // until httpd listens and the neighbours are found
		if out, err := wget("http://[fd00:42:0:1::5]:8080/"); err == nil && strings.Contains(out, "hello") {
			break
		} else if i == 100 {
			t.Fatalf("the endpoint's httpd never answered over IPv6: %v %s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, mode := range []string{ModeIPTables, ModeNFTables} {
		t.Run(mode, func(t *testing.T) {
			s, err := newModeSyncer(mode, v1.IPv6Protocol, time.Hour)
			if err != nil {
				t.Skip(err)
			}
			flushEverything(t)
			if out, err := wget("http://[fd00:43::10]/"); err == nil {
				t.Fatalf("the cluster IP answered before any rule: %s", out)
			}
			if _, err := s.sync(time.Now(), trafficInput6()); err != nil {
				t.Fatal(err)
			}
			for _, url := range []string{"http://[fd00:43::10]/", "http://[" + testNodeIP6.String() + "]:30080/"} {
				if out, err := wget(url); err != nil || out != "hello over IPv6\n" {
					t.Errorf("GET %s: %v %q", url, err, out)
				}
			}
			for _, url := range []string{"http://[::1]:30080/", "http://[fd00:43::11]/"} {
				if out, err := wget(url); err == nil || !strings.Contains(out, "refused") {
					t.Errorf("GET %s: %v %q, want connection refused", url, err, out)
				}
			}
		})
	}
}

// TestConntrackDeletesStaleUDPFlowsIPv6 is TestConntrackDeletesStaleUDPFlows
// in IPv6: the clean-up asks netlink for the IPv6 conntrack table.
func TestConntrackDeletesStaleUDPFlowsIPv6(t *testing.T) {
	requireIP6Tables(t)
	flushEverything(t)
	t.Cleanup(func() { flushEverything(t) })
	s := newRealSyncer6(t)
	in := loadFamilyInput(t, "ipv6", v1.IPv6Protocol) // UDP [fd00:43::a]:53 → [fd00:42:0:1::2]:53
	if _, err := s.sync(time.Now(), in); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "link", "add", "orch-ct0", "type", "veth", "peer", "name", "orch-ct1")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "orch-ct0").Run() })
	run(t, "ip", "-6", "addr", "add", "fd00:42:0:1::1/64", "dev", "orch-ct0", "nodad")
	run(t, "ip", "link", "set", "orch-ct0", "up")
	run(t, "ip", "link", "set", "orch-ct1", "up")
	run(t, "ip", "-6", "route", "add", "fd00:43::/112", "dev", "orch-ct0")
	for _, ip := range []string{"fd00:42:0:1::2", "fd00:42:0:1::9"} {
		run(t, "ip", "-6", "neigh", "add", ip, "lladdr", "02:00:00:00:00:01", "dev", "orch-ct0")
	}
	send := func(addr string) {
		c, err := net.Dial("udp6", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("query")); err != nil {
			t.Fatal(err)
		}
	}
	send("[fd00:43::a]:53") // DNATed to the endpoint that goes away
	send("[fd00:42:0:1::9]:53")
	udp53 := func() []string { return udpFlowsTo(t, unix.AF_INET6, 53) }
	if got, want := udp53(), []string{"fd00:42:0:1::9>fd00:42:0:1::9", "fd00:43::a>fd00:42:0:1::2"}; !slices.Equal(got, want) {
		t.Fatalf("conntrack entries before: %v, want %v", got, want)
	}
	changed := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	for _, sl := range changed.Slices {
		if sl.Name == "dns-1" {
			sl.Endpoints[0].Addresses = []string{"fd00:42:0:1::3"}
		}
	}
	res, err := s.sync(time.Now(), changed)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := udp53(), []string{"fd00:42:0:1::9>fd00:42:0:1::9"}; res.ConntrackDeleted != 1 || !slices.Equal(got, want) {
		t.Errorf("deleted %d entries, left %v; want 1 deleted and %v left", res.ConntrackDeleted, got, want)
	}
}

// TestNFTKernelIPv6 has the real nft take the IPv6 input's table ip6
// kube-proxy through the nftables mode's syncer, then a partial sync of
// a moved endpoint.
func TestNFTKernelIPv6(t *testing.T) {
	requireNetns(t)
	nft, err := knftables.New(knftables.IPv6Family, nftTable)
	if err != nil {
		t.Skipf("nft is not usable here (Debian: apt-get install nftables): %v", err)
	}
	flushEverything(t)
	t.Cleanup(func() { flushEverything(t) })
	m := &nftMode{s: newNFTSyncer(nft, time.Hour), udp: udpCleaner{ct: netlinkConntrack{family: unix.AF_INET6}}}
	in := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	if res, err := m.sync(time.Now(), in); err != nil || !res.Full {
		t.Fatalf("full sync: %+v, %v", res, err)
	}
	moved := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	for _, sl := range moved.Slices {
		if sl.Name == "sticky-1" {
			sl.Endpoints[0].Addresses = []string{"fd00:42:0:1::bb"}
		}
	}
	if res, err := m.sync(time.Now(), moved); err != nil || res.Full || res.Rules == 0 {
		t.Fatalf("partial sync: %+v, %v", res, err)
	}
	st := NFTBuild(moved)
	chains, err := nft.List(context.Background(), "chains")
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.Chains {
		if !slices.Contains(chains, name) {
			t.Errorf("chain %s not in the kernel's table", name)
		}
	}
	sets, err := nft.List(context.Background(), "sets")
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.Affinity {
		if !slices.Contains(sets, name) {
			t.Errorf("affinity set %s not in the kernel's table", name)
		}
	}
	elems, err := nft.ListElements(context.Background(), "map", nftServiceIPs)
	if err != nil || len(elems) != len(st.Elements[nftServiceIPs]) {
		t.Errorf("service-ips in the kernel: %d elements (%v), want %d", len(elems), err, len(st.Elements[nftServiceIPs]))
	}
}
