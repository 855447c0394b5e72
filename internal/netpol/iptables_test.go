package netpol

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"orch/internal/iptsync"
	"orch/internal/netnstest"
)

// The tests that touch the kernel's tables run in a private network
// namespace (netnstest).
func TestMain(m *testing.M) { netnstest.Main(m) }

// TestIPTablesLifecycle writes the rules of testdata/policies.yaml into the
// kernel, removes a policy (its chains go in a partial sync), moves its
// jump back to the top after another program inserted a rule above it,
// and cleans up.
func TestIPTablesLifecycle(t *testing.T) {
	netnstest.Require(t)
	d, err := iptsync.NewFamilyDriver(iptsync.IPv4, "network policy", jumps, true)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnforcer(Config{NodeName: "n1"}, nil, nil, func(iptsync.Family) (iptsync.Writer, error) { return d, nil })
	if err != nil {
		t.Fatal(err)
	}
	in := loadInput(t, "policies", "n1")
	if err := e.sync(in); err != nil {
		t.Fatal(err)
	}
	chains := netnstest.SaveChains(t, "filter")
	want := text(Build(in))
	for _, l := range strings.Split(want, "\n") {
		if strings.HasPrefix(l, "-A ") && !slices.Contains(chains[strings.Fields(l)[1]], l) {
			t.Errorf("the kernel lacks %q", l)
		}
	}
	for _, from := range []string{"FORWARD", "INPUT"} {
		if r := chains[from]; len(r) == 0 || !strings.HasSuffix(r[0], "-j KUBE-NP-"+from) {
			t.Errorf("%s does not start with the jump to KUBE-NP-%s: %v", from, from, r)
		}
	}

	// The egress policies go: their chains go, the others stay unwritten.
	var kept = in
	kept.Policies = nil
	for _, p := range in.Policies {
		if !strings.HasPrefix(p.Name, "egress") {
			kept.Policies = append(kept.Policies, p)
		}
	}
	text, full, err := e.families[0].s.Sync(time.Now(), tables(Build(kept)))
	if err != nil || full {
		t.Fatalf("partial sync: full %v, %v", full, err)
	}
	gone := []string{chainName(prefixPodOut, "b/client-1"), chainName(prefixPolicy, "b/egress/egress"), chainName(prefixPolicy, "b/egress/egress/2/0"),
		chainName(prefixPolicy, "b/egress-named/egress")}
	if !slices.Equal(text.Deleted, sorted(gone)) {
		t.Errorf("deleted %v, want %v", text.Deleted, sorted(gone))
	}
	if strings.Contains(string(text.Data), ":"+chainName(prefixPolicy, "a/from-blue/ingress")) {
		t.Error("a partial sync rewrote an unchanged policy chain")
	}
	chains = netnstest.SaveChains(t, "filter")
	for _, g := range gone {
		if _, ok := chains[g]; ok {
			t.Errorf("chain %s still exists", g)
		}
	}

	// Another program puts a rule above ours; the next check moves ours back.
	netnstest.Run(t, "iptables", "-I", "FORWARD", "1", "-j", "ACCEPT")
	if repaired, err := d.EnsureJumps(); err != nil || !repaired {
		t.Fatalf("EnsureJumps = %v, %v; want a repair", repaired, err)
	}
	if r := netnstest.SaveChains(t, "filter")["FORWARD"]; len(r) != 2 || !strings.HasSuffix(r[0], "-j KUBE-NP-FORWARD") {
		t.Errorf("FORWARD after the repair: %v", r)
	}

	if err := Cleanup(nil); err != nil {
		t.Fatal(err)
	}
	for name, rules := range netnstest.SaveChains(t, "filter") {
		if isOwnedChain(name) {
			t.Errorf("chain %s left after Cleanup", name)
		}
		for _, r := range rules {
			if strings.Contains(r, "KUBE-NP-") {
				t.Errorf("rule left after Cleanup: %s", r)
			}
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestDualStackLifecycle writes the rules of testdata/dual-stack.yaml into
// both families' tables, removes the egress policy (its chains go from the
// ip6tables in a partial sync), and cleans up both families.
func TestDualStackLifecycle(t *testing.T) {
	netnstest.Require(t)
	for _, bin := range []string{"ip6tables", "ip6tables-restore", "ip6tables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian: apt-get install iptables)", bin)
		}
	}
	e, err := New(Config{NodeName: "n1", ClusterCIDRs: dualStack}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := loadInput(t, "dual-stack", "n1")
	in.PodBridge = "orch0" // its link-local rules as ip6tables-save prints them
	if err := e.sync(in); err != nil {
		t.Fatal(err)
	}
	for _, f := range []iptsync.Family{iptsync.IPv4, iptsync.IPv6} {
		chains := saveChains(t, f)
		in.Family = f
		for _, l := range strings.Split(text(Build(in)), "\n") {
			if strings.HasPrefix(l, "-A ") && !slices.Contains(chains[strings.Fields(l)[1]], l) {
				t.Errorf("%s: the kernel lacks %q", f, l)
			}
		}
		for _, from := range []string{"FORWARD", "INPUT"} {
			if r := chains[from]; len(r) == 0 || !strings.HasSuffix(r[0], "-j KUBE-NP-"+from) {
				t.Errorf("%s: %s does not start with the jump to KUBE-NP-%s: %v", f, from, from, r)
			}
		}
	}
	if r := saveChains(t, iptsync.IPv6)["KUBE-NP-FORWARD"]; !slices.ContainsFunc(r, func(l string) bool { return strings.Contains(l, "-d fd00:42:1::10/128") }) {
		t.Errorf("web-1's IPv6 address is not isolated: %v", r)
	}

	// The egress policy goes: in IPv6 its chains go, the others stay unwritten.
	kept := in
	kept.Family = iptsync.IPv6
	kept.Policies = nil
	for _, p := range in.Policies {
		if p.Name != "egress" {
			kept.Policies = append(kept.Policies, p)
		}
	}
	v6 := e.families[1]
	if v6.family != iptsync.IPv6 {
		t.Fatalf("the second family is %s", v6.family)
	}
	text, full, err := v6.s.Sync(time.Now(), tables(Build(kept)))
	if err != nil || full {
		t.Fatalf("partial sync: full %v, %v", full, err)
	}
	gone := []string{chainName(prefixPodOut, "b/client-1"), chainName(prefixPolicy, "b/egress/egress"), chainName(prefixPolicy, "b/egress/egress/2/0")}
	if !slices.Equal(text.Deleted, sorted(gone)) {
		t.Errorf("deleted %v, want %v", text.Deleted, sorted(gone))
	}
	if strings.Contains(string(text.Data), ":"+chainName(prefixPolicy, "a/from-blue/ingress")) {
		t.Error("a partial sync rewrote an unchanged policy chain")
	}
	chains6, chains4 := saveChains(t, iptsync.IPv6), saveChains(t, iptsync.IPv4)
	for _, g := range gone {
		if _, ok := chains6[g]; ok {
			t.Errorf("IPv6 chain %s still exists", g)
		}
		if _, ok := chains4[g]; !ok {
			t.Errorf("IPv4 chain %s went with the IPv6 one", g)
		}
	}

	if err := Cleanup(nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []iptsync.Family{iptsync.IPv4, iptsync.IPv6} {
		for name, rules := range saveChains(t, f) {
			if isOwnedChain(name) {
				t.Errorf("%s: chain %s left after Cleanup", f, name)
			}
			for _, r := range rules {
				if strings.Contains(r, "KUBE-NP-") {
					t.Errorf("%s: rule left after Cleanup: %s", f, r)
				}
			}
		}
	}
}

// saveChains parses the filter table of family f, as iptables-save or
// ip6tables-save prints it, into chain → rules.
func saveChains(t *testing.T, f iptsync.Family) map[string][]string {
	t.Helper()
	if f == iptsync.IPv4 {
		return netnstest.SaveChains(t, "filter")
	}
	return netnstest.SaveChainsOf(t, "ip6tables-save", "filter")
}
