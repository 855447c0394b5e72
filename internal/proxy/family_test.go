package proxy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"

	"orch/internal/goldentest"
)

// nftDump writes in's nftables state into knftables' fake of in's family
// and returns its dump.
func nftDump(t testing.TB, in Input) string {
	t.Helper()
	fake := knftables.NewFake(nftFamily(in.Family), nftTable)
	tx := fake.NewTransaction()
	nftFullTx(tx, NFTBuild(in), nil)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("the fake refused the transaction: %v", err)
	}
	return fake.Dump()
}

// TestFamilyGolden renders the IPv6 input as the IPv6 family, and the
// dual-stack input as each family, in both modes.
func TestFamilyGolden(t *testing.T) {
	iptText := func(in Input) string { return fullText(Build(in)) }
	nftText := func(in Input) string { return nftDump(t, in) }
	golden(t, "ipv6", []byte(iptText(loadFamilyInput(t, "ipv6", v1.IPv6Protocol))))
	goldentest.Check(t, filepath.Join("testdata", "ipv6.nft.golden"), []byte(nftText(loadFamilyInput(t, "ipv6", v1.IPv6Protocol))))
	golden(t, "dual-stack", bothFamilies(t, "dual-stack", iptText))
	goldentest.Check(t, filepath.Join("testdata", "dual-stack.nft.golden"), bothFamilies(t, "dual-stack", nftText))
}

// TestDualStackBuild: a dual-stack Service with a slice set per family
// gets rules in both families, each with its own addresses; a
// single-stack Service gets rules in its family only; in both modes.
func TestDualStackBuild(t *testing.T) {
	v4 := loadFamilyInput(t, "dual-stack", v1.IPv4Protocol)
	v6 := loadFamilyInput(t, "dual-stack", v1.IPv6Protocol)
	for _, tc := range []struct {
		in           Input
		ports        int
		want, absent []string
	}{
		{v4, 3,
			[]string{"-d 10.43.0.10 --dport 80", "--to-destination 10.42.1.5:8080", "--to-destination 10.42.2.7:8080",
				"-d 10.43.0.20 --dport 80", "-d 10.43.0.50 --dport 80", "-d 203.0.113.50 --dport 80", "-s 198.51.100.0/24",
				"! -s 10.42.0.0/16", "-s 10.42.0.0/16 -j", "--dport 30080 -j"},
			[]string{"fd00:", "2001:db8", "default/only6"}},
		{v6, 3,
			[]string{"-d fd00:43::10 --dport 80", "--to-destination [fd00:42:0:1::5]:8080", "--to-destination [fd00:42:0:2::7]:8080",
				"-d fd00:43::30 --dport 80", "-d fd00:43::50 --dport 80", "-d 2001:db8::50 --dport 80", "-s 2001:db8:2::/48",
				"! -s fd00:42::/56", "-s fd00:42::/56 -j", "--dport 30080 -j"},
			[]string{"10.4", "203.0.113", "198.51.100", "default/only4"}},
	} {
		rs := Build(tc.in)
		text := fullText(rs)
		if rs.ServicePorts != tc.ports {
			t.Errorf("%s: %d service ports, want %d", tc.in.Family, rs.ServicePorts, tc.ports)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s rules lack %q", tc.in.Family, w)
			}
		}
		for _, a := range tc.absent {
			if strings.Contains(text, a) {
				t.Errorf("%s rules have %q, of the other family", tc.in.Family, a)
			}
		}
		// The same in the nftables mode: the one table of the family.
		st := NFTBuild(tc.in)
		dump := nftDump(t, tc.in)
		if st.ServicePorts != tc.ports {
			t.Errorf("%s nftables: %d service ports, want %d", tc.in.Family, st.ServicePorts, tc.ports)
		}
		for _, a := range tc.absent {
			if strings.Contains(dump, a) {
				t.Errorf("%s nftables table has %q, of the other family", tc.in.Family, a)
			}
		}
	}
	if dump := nftDump(t, v6); !strings.Contains(dump, "add table ip6 kube-proxy") ||
		!strings.Contains(dump, "dnat to [fd00:42:0:1::5]:8080") || !strings.Contains(dump, "fd00:43::30 . tcp . 80 : goto service-") {
		t.Errorf("IPv6 nftables table:\n%s", dump)
	}
}

// TestIPv6Rules states what differs in the IPv6 rules, so that a golden
// file rewritten with -update cannot hide a regression in it.
func TestIPv6Rules(t *testing.T) {
	in := loadFamilyInput(t, "ipv6", v1.IPv6Protocol)
	ipt, nft := fullText(Build(in)), nftDump(t, in)
	lb := "default/lb:http"
	has := func(text string, want ...string) error {
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("missing %q", w)
			}
		}
		return nil
	}
	hasNot := func(text string, absent ...string) error {
		for _, a := range absent {
			if strings.Contains(text, a) {
				return fmt.Errorf("unexpected %q", a)
			}
		}
		return nil
	}
	for name, err := range map[string]error{
		"no NodePorts on ::1":            lastRule(ipt, chainServices, "-m addrtype --dst-type LOCAL ! -d ::1/128 -j KUBE-NODEPORTS"),
		"no KUBE-FIREWALL":               hasNot(ipt, chainFirewall, "127.0.0.0/8"),
		"DNAT in brackets":               has(ipt, "-j DNAT --to-destination [fd00:42:0:1::5]:8080"),
		"masquerade off-cluster":         has(ipt, "-d fd00:43::10 --dport 80 ! -s fd00:42::/56 -j KUBE-MARK-MASQ"),
		"pod traffic short-circuit":      has(ipt, "-s fd00:42::/56 -j "+portChainName(prefixSVC, "default/shop:http", "tcp")),
		"source range of the family":     has(ipt, "-s 2001:db8:1::/48 -j "+portChainName(prefixEXT, lb, "tcp")),
		"LB IP allowed from node":        has(ipt, "-s 2001:db8::50 -j "+portChainName(prefixEXT, lb, "tcp")),
		"other family's addresses":       hasNot(ipt, "198.51.100", "203.0.113", "192.168.0.2"),
		"::/0 source range: no firewall": hasNot(ipt, portChainName(prefixFW, "default/open:https", "tcp")),
		"REJECT without endpoints":       has(ipt, "-d fd00:43::70 --dport 80 -j REJECT", "--dport 30070 -j REJECT"),
		"UDP":                            has(ipt, "-m udp -p udp -j DNAT --to-destination [fd00:42:0:1::2]:53"),
		"affinity":                       has(ipt, "--rcheck --seconds 60 --reap"),
		"nft table":                      has(nft, "add table ip6 kube-proxy", "type ipv6_addr . inet_proto . inet_service : verdict"),
		"nft no localhost drop":          hasNot(nft, "127.0.0.0/8", " ip daddr", " ip saddr", "ipv4_addr"),
		"nft NodePorts not on ::1":       has(nft, "fib daddr type local ip6 daddr != ::1 meta l4proto . th dport vmap @service-nodeports", "ip6 daddr != ::1 meta l4proto . th dport vmap @no-endpoint-nodeports"),
		"nft masquerade":                 has(nft, "ip6 daddr @cluster-ips ip6 saddr != fd00:42::/56 mark set mark or 0x4000"),
		"nft DNAT in brackets":           has(nft, "meta l4proto tcp dnat to [fd00:42:0:1::5]:8080"),
		"nft endpoint chain names":       has(nft, "__fd00.42.0.1..b/8080"),
		"nft affinity":                   has(nft, "update @affinity-", "{ ip6 saddr timeout 60s }", "type ipv6_addr ; flags dynamic,timeout"),
		"nft source ranges":              has(nft, "ip6 saddr != { 2001:db8:1::/48, 2001:db8::50 } drop"),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestLocalReadyDualStack: the health check counts a dual-stack Service's
// local pods once, though each has an address in both slice sets.
func TestLocalReadyDualStack(t *testing.T) {
	in := loadInput(t, "dual-stack")
	in.NodeName = "node-b"
	for _, s := range in.Services {
		want := map[string]int{"web": 1, "only4": 0, "only6": 0, "lb": 0}[s.Name]
		if got := localReady(in, s); got != want {
			t.Errorf("%s: %d local ready endpoints, want %d", s.Name, got, want)
		}
	}
	in.NodeName = testNode
	for _, s := range in.Services {
		if got := localReady(in, s); got != 1 {
			t.Errorf("%s: %d local ready endpoints on %s, want 1", s.Name, got, testNode)
		}
	}
}
