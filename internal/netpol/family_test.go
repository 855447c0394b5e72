package netpol

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"orch/internal/cidr"
	"orch/internal/goldentest"
	"orch/internal/iptsync"
)

// dualStack is a dual-stack cluster's --cluster-cidr.
var dualStack = []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16"), netip.MustParsePrefix("fd00:42::/56")}

// familyInput is testdata/<name>.yaml on node as the rules of family f.
func familyInput(t *testing.T, name, node string, f iptsync.Family) Input {
	t.Helper()
	in := loadInput(t, name, node)
	in.Family, in.PodBridge = f, "orch0"
	return in
}

func TestBuildDualStackGolden(t *testing.T) {
	for _, f := range []iptsync.Family{iptsync.IPv4, iptsync.IPv6} {
		t.Run(f.String(), func(t *testing.T) {
			rs := Build(familyInput(t, "dual-stack", "n1", f))
			name := "dual-stack-n1-" + strings.ToLower(f.String()) + ".golden"
			goldentest.Check(t, filepath.Join("testdata", name), []byte(text(rs)))
		})
	}
}

// TestBuildDualStack checks, rule by rule, that a pod with two addresses
// is isolated in both families by the same policies, that a pod with one
// address is in its family's rules only, and that each ipBlock goes to its
// own family's rules.
func TestBuildDualStack(t *testing.T) {
	v4 := text(Build(familyInput(t, "dual-stack", "n1", iptsync.IPv4)))
	v6 := text(Build(familyInput(t, "dual-stack", "n1", iptsync.IPv6)))
	webIn := chainName(prefixPodIn, "a/web-1")
	oldIn := chainName(prefixPodIn, "a/old-1")
	clientOut := chainName(prefixPodOut, "b/client-1")
	fromBlue := chainName(prefixPolicy, "a/from-blue/ingress")
	blockSub := chainName(prefixPolicy, "a/from-blue/ingress/1/0") // the family's one block of that rule
	egress := chainName(prefixPolicy, "b/egress/egress")
	ndp := []string{
		`-p ipv6-icmp -m icmp6 --icmpv6-type 135 -m comment --comment "IPv6 neighbor solicitation" -j RETURN`,
		`-p ipv6-icmp -m icmp6 --icmpv6-type 136 -m comment --comment "IPv6 neighbor advertisement" -j RETURN`,
		// Link-local addresses, which no pod's rule names, are refused on
		// the pod bridge.
		`-s fe80::/10 -i orch0 ! -p ipv6-icmp -m comment --comment "link-local on the pod bridge" -j REJECT --reject-with icmp6-port-unreachable`,
		`-d fe80::/10 -i orch0 ! -p ipv6-icmp -m comment --comment "link-local on the pod bridge" -j REJECT --reject-with icmp6-port-unreachable`,
	}
	for _, tc := range []struct {
		name, text, chain string
		want              []string // rules that must be there
		not               []string // text no rule may contain
	}{
		{"IPv4: the pods are hooked by their IPv4 addresses", v4, chainForward, []string{
			`-d 10.42.1.10/32 -m comment --comment "a/web-1 ingress" -j ` + webIn,
			`-d 10.42.1.30/32 -m comment --comment "a/old-1 ingress" -j ` + oldIn,
			`-s 10.42.1.20/32 -m comment --comment "b/client-1 egress" -j ` + clientOut,
		}, []string{"fd00:", "icmp6", "fe80"}},
		{"IPv6: the same pods by their IPv6 addresses, the same chains, neighbor discovery first", v6, chainForward, append(ndp,
			`-d fd00:42:1::10/128 -m comment --comment "a/web-1 ingress" -j `+webIn,
			`-s fd00:42:1::20/128 -m comment --comment "b/client-1 egress" -j `+clientOut,
		), []string{"10.42.", "a/old-1"}},
		{"IPv6: egress to the node itself", v6, chainInput, append(ndp,
			`-s fd00:42:1::20/128 -m comment --comment "b/client-1 egress" -j `+clientOut), []string{"10.42."}},
		{"IPv4: a pod's chain rejects with ICMP", v4, webIn, []string{
			"-j MARK --set-xmark 0x0/0x10000", "-m mark --mark 0x10000/0x10000 -j RETURN",
			`-m comment --comment "network policy denies ingress of a/web-1" -j REJECT --reject-with icmp-port-unreachable`}, nil},
		{"IPv6: the same marks, rejecting with ICMPv6", v6, webIn, []string{
			"-j MARK --set-xmark 0x0/0x10000", "-j " + chainName(prefixPolicy, "a/deny/ingress"), "-j " + fromBlue,
			"-m mark --mark 0x10000/0x10000 -j RETURN",
			`-m comment --comment "network policy denies ingress of a/web-1" -j REJECT --reject-with icmp6-port-unreachable`}, nil},
		{"IPv6: pod peers by their IPv6 addresses, a named port resolved on the target", v6, fromBlue, []string{
			"-s fd00:42:1::20/128 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s fd00:42:2::20/128 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s fd00:42:2::30/128 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000", // an IPv6-only peer
			"-s fd00:42:2::20/128 -d fd00:42:1::10/128 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s 2001:db8::/32 -j " + blockSub,
		}, []string{"10.42.", "192.168."}},
		{"IPv4: the IPv4 block only, no IPv6-only peer", v4, fromBlue, []string{
			"-s 10.42.1.20/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s 192.168.0.0/16 -j " + blockSub,
		}, []string{":", "2001:db8"}},
		{"IPv6: the IPv6 block's exception", v6, blockSub, []string{
			"-s 2001:db8:1::/48 -j RETURN", "-p sctp -m sctp --dport 7000:7010 -j MARK --set-xmark 0x10000/0x10000"}, []string{"192.168."}},
		{"IPv4: the IPv4 block's exception", v4, blockSub, []string{"-s 192.168.1.0/24 -j RETURN"}, []string{"2001:db8"}},
		{"IPv6 egress: the namespace's pods, DNS, the IPv6 block, a named port in an IPv6 block", v6, egress, []string{
			"-d fd00:42:1::10/128 -j MARK --set-xmark 0x20000/0x20000",
			"-p udp -m udp --dport 53 -j MARK --set-xmark 0x20000/0x20000",
			"-d fd00::/8 -j " + chainName(prefixPolicy, "b/egress/egress/2/0"),
			"-d fd00:42:2::20/128 -p tcp -m tcp --dport 9090 -j MARK --set-xmark 0x20000/0x20000",
		}, []string{"10.", "a/old-1"}},
		{"IPv6 egress exception", v6, chainName(prefixPolicy, "b/egress/egress/2/0"), []string{"-d fd00:42::/56 -j RETURN"}, []string{"10.42."}},
		{"IPv4 egress: an IPv6 block names no IPv4 pod", v4, egress, []string{
			"-d 10.42.1.10/32 -j MARK --set-xmark 0x20000/0x20000", "-d 10.42.1.30/32 -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.0.0.0/8 -j " + chainName(prefixPolicy, "b/egress/egress/2/0"),
		}, []string{"--dport 9090", "fd00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkChain(t, tc.text, tc.chain, tc.want, tc.not)
		})
	}
	// The pod with an IPv4 address only has no IPv6 chain; every other
	// isolated pod has the same chains in both families.
	if strings.Contains(v6, oldIn) {
		t.Error("a/old-1 has no IPv6 address but got an IPv6 chain")
	}
	for _, c := range []string{webIn, clientOut} {
		if len(rulesOfChain(v4, c)) == 0 || len(rulesOfChain(v6, c)) == 0 {
			t.Errorf("chain %s is not in both families", c)
		}
	}
}

// TestBuildIPv4Unchanged: the IPv4 rules of a single-stack input carry
// nothing of IPv6 (the golden files of policies.yaml hold them byte for
// byte), and an IPv4-only input gives no IPv6 rules but the fixed chains.
func TestBuildIPv4Unchanged(t *testing.T) {
	v4 := text(Build(familyInput(t, "policies", "n1", iptsync.IPv4)))
	if strings.Contains(v4, "icmp6") || strings.Contains(v4, "/128") {
		t.Errorf("IPv4 rules carry IPv6:\n%s", v4)
	}
	rs := Build(familyInput(t, "policies", "n1", iptsync.IPv6))
	if len(rs.Chains) != 2 || rs.Pods != 0 || rs.Policies != 0 {
		t.Errorf("IPv6 rules of an IPv4-only cluster: %d chains, %d pods, %d policies:\n%s", len(rs.Chains), rs.Pods, rs.Policies, text(rs))
	}
}

func TestFamiliesOf(t *testing.T) {
	for _, tc := range []struct {
		cidrs string // as --cluster-cidr
		want  string
	}{
		{"", "[IPv4]"},
		{"10.42.0.0/16", "[IPv4]"},
		{"10.42.0.0/16,fd00:42::/56", "[IPv4 IPv6]"},
		{"fd00:42::/56,10.42.0.0/16", "[IPv6 IPv4]"},
		{"fd00:42::/56", "[IPv6]"},
	} {
		var ps []netip.Prefix
		if tc.cidrs != "" {
			var err error
			if ps, err = cidr.ParseList("--cluster-cidr", tc.cidrs); err != nil {
				t.Fatal(err)
			}
		}
		if got := familiesOf(ps); fmt.Sprint(got) != tc.want {
			t.Errorf("familiesOf(%q) = %v, want %s", tc.cidrs, got, tc.want)
		}
	}
}

// TestEnforcerFamilies: the enforcer asks a writer of each cluster family,
// and refuses to start when one is missing (ip6tables not installed):
// pods would stay open in that family.
func TestEnforcerFamilies(t *testing.T) {
	var asked []iptsync.Family
	e, err := newEnforcer(Config{NodeName: "n1", ClusterCIDRs: dualStack}, nil, nil,
		func(f iptsync.Family) (iptsync.Writer, error) { asked = append(asked, f); return nil, nil }, false)
	if err != nil || len(e.families) != 2 || fmt.Sprint(asked) != "[IPv4 IPv6]" {
		t.Fatalf("newEnforcer: %v; asked %v", err, asked)
	}
	_, err = newEnforcer(Config{NodeName: "n1", ClusterCIDRs: dualStack}, nil, nil,
		func(f iptsync.Family) (iptsync.Writer, error) {
			if f == iptsync.IPv6 {
				return nil, fmt.Errorf("ip6tables-restore not found")
			}
			return nil, nil
		}, false)
	if err == nil {
		t.Error("newEnforcer without ip6tables on a dual-stack cluster: no error")
	}
}

// recorder is a Writer that keeps what it was given to restore.
type recorder struct {
	data []string
	fail error
}

func (r *recorder) EnsureJumps() (bool, error)      { return false, nil }
func (r *recorder) Chains(string) ([]string, error) { return nil, nil }
func (r *recorder) Restore(data []byte) error {
	if r.fail != nil {
		return r.fail
	}
	r.data = append(r.data, string(data))
	return nil
}

// TestEnforcerSyncsEachFamily: one sync writes each family's rules to its
// own writer; a family that fails does not hold back the other, and the
// enforcer is not ready until both are written.
func TestEnforcerSyncsEachFamily(t *testing.T) {
	w := map[iptsync.Family]*recorder{iptsync.IPv4: {}, iptsync.IPv6: {fail: fmt.Errorf("ip6tables-restore failed")}}
	e, err := newEnforcer(Config{NodeName: "n1", ClusterCIDRs: dualStack}, nil, nil,
		func(f iptsync.Family) (iptsync.Writer, error) { return w[f], nil }, false)
	if err != nil {
		t.Fatal(err)
	}
	in := loadInput(t, "dual-stack", "n1")
	if err := e.sync(in); err == nil || !strings.Contains(err.Error(), "IPv6") {
		t.Fatalf("sync with a failing IPv6 writer: %v", err)
	}
	if len(w[iptsync.IPv4].data) != 1 || !strings.Contains(w[iptsync.IPv4].data[0], "-d 10.42.1.10/32") {
		t.Fatalf("IPv4 rules not written: %q", w[iptsync.IPv4].data)
	}
	select {
	case <-e.Ready():
		t.Fatal("ready while the IPv6 rules are not written")
	default:
	}
	w[iptsync.IPv6].fail = nil
	if err := e.sync(in); err != nil {
		t.Fatal(err)
	}
	if got := w[iptsync.IPv6].data; len(got) != 1 || !strings.Contains(got[0], "-d fd00:42:1::10/128") || strings.Contains(got[0], "10.42.1.10") {
		t.Errorf("IPv6 rules: %q", got)
	}
	select {
	case <-e.Ready():
	default:
		t.Error("not ready after both families were written")
	}
}
