package netpol

import (
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
	d, err := iptsync.NewDriver("network policy", jumps, true)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnforcer(Config{NodeName: "n1"}, nil, nil, d)
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
	text, full, err := e.s.Sync(time.Now(), []iptsync.Table{{Name: "filter", Chains: Build(kept).Chains, Stale: isObjectChain}})
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
