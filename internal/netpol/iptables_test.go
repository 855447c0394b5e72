package netpol

import (
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	e, err := newEnforcer(Config{NodeName: "n1"}, nil, nil, func(iptsync.Family) (iptsync.Writer, error) { return d, nil }, true)
	if err != nil {
		t.Fatal(err)
	}
	in := loadInput(t, "policies", "n1")
	if err := e.sync(in); err != nil {
		t.Fatal(err)
	}
	chains := netnstest.SaveChains(t, "filter")
	in.MaxSets = e.families[0].maxSets
	rs := Build(in)
	if len(rs.Sets) == 0 {
		t.Fatal("the rules use no ipsets")
	}
	want := text(rs)
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
	checkSets(t, iptsync.IPv4, rs.Sets)

	// A peer pod comes (on the other node, without ports): a set
	// changes, no chain does.
	moved := in
	moved.Pods = append(slices.Clone(in.Pods), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "client-3", Labels: map[string]string{"app": "client"}},
		Spec:       v1.PodSpec{NodeName: "n2"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.42.2.30", PodIPs: []v1.PodIP{{IP: "10.42.2.30"}}}})
	before := netnstest.SaveChains(t, "filter")
	if err := e.sync(moved); err != nil {
		t.Fatal(err)
	}
	if after := netnstest.SaveChains(t, "filter"); !maps.EqualFunc(before, after, slices.Equal) {
		t.Error("a new peer changed the chains")
	}
	rs = Build(moved)
	checkSets(t, iptsync.IPv4, rs.Sets)
	if !slices.ContainsFunc(rs.Sets, func(s Set) bool { return slices.Contains(s.Members, "10.42.2.30") }) {
		t.Errorf("no set has the new peer: %v", rs.Sets)
	}

	// The egress policies go: their chains go, the others stay unwritten.
	var kept = in
	kept.Policies = nil
	for _, p := range in.Policies {
		if !strings.HasPrefix(p.Name, "egress") {
			kept.Policies = append(kept.Policies, p)
		}
	}
	kept.MaxSets = in.MaxSets
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
	// The next sync destroys the egress rules' sets.
	if err := e.sync(kept); err != nil {
		t.Fatal(err)
	}
	checkSets(t, iptsync.IPv4, Build(kept).Sets)

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
	checkSets(t, iptsync.IPv4, nil)
}

// checkSets checks that the kernel's sets of ours in family f are want,
// members and all.
func checkSets(t *testing.T, f iptsync.Family, want []Set) {
	t.Helper()
	have, err := kernelSets{family: f}.list()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for name, members := range have {
		got[name] = slices.Sorted(slices.Values(members))
	}
	wantMap := map[string][]string{}
	for _, s := range want {
		wantMap[s.Name] = s.Members
	}
	if !maps.EqualFunc(got, wantMap, slices.Equal) {
		t.Errorf("%s sets in the kernel: %v, want %v", f, got, wantMap)
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
	in.MaxSets = e.families[0].maxSets
	for _, f := range []iptsync.Family{iptsync.IPv4, iptsync.IPv6} {
		chains := saveChains(t, f)
		in.Family = f
		rs := Build(in)
		checkSets(t, f, rs.Sets)
		for _, l := range strings.Split(text(rs), "\n") {
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
		checkSets(t, f, nil)
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

// TestKernelSetsBig: a set too big for one netlink message is listed
// whole (the kernel sends the family in the first part only), so a sync
// of a big set that did not change changes nothing.
func TestKernelSetsBig(t *testing.T) {
	netnstest.Require(t)
	if !ipsetsAvailable() {
		t.Skip("no ip_set in this kernel")
	}
	k := kernelSets{family: iptsync.IPv4}
	want := Set{Name: prefixSetSrc + "BIG"}
	for i := range 3000 {
		want.Members = append(want.Members, fmt.Sprintf("10.44.%d.%d", i/250, 1+i%250))
	}
	before, _ := planSets([]Set{want}, nil)
	if err := k.apply(before); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cleanupSets(); err != nil {
			t.Error(err)
		}
	}()
	have, err := k.list()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(have[want.Name]); got != len(want.Members) {
		t.Errorf("listed %d members, want %d", got, len(want.Members))
	}
	if again, after := planSets([]Set{want}, have); len(again) != 0 || len(after) != 0 {
		t.Errorf("an unchanged set plans %d changes and %d destroys", len(again), len(after))
	}
	if other, err := (kernelSets{family: iptsync.IPv6}).list(); err != nil || len(other) != 0 {
		t.Errorf("the IPv6 sets: %v, %v; want none", other, err)
	}
}

// TestSetsFallback: when a set cannot be made (here another set holds its
// name, in the other family), the sync names each peer address instead of
// failing, and the rules are those without sets.
func TestSetsFallback(t *testing.T) {
	netnstest.Require(t)
	if !ipsetsAvailable() {
		t.Skip("no ip_set in this kernel")
	}
	e, err := New(Config{NodeName: "n1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := loadInput(t, "policies", "n1")
	in.MaxSets = e.families[0].maxSets
	taken := Build(in).Sets[0].Name
	if err := netlink.IpsetCreate(taken, "hash:ip", netlink.IpsetCreateOptions{Family: unix.AF_INET6}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Cleanup(nil); err != nil {
			t.Error(err)
		}
		if err := netlink.IpsetDestroy(taken); err != nil {
			t.Error(err)
		}
	}()
	if err := e.sync(in); err != nil {
		t.Fatalf("sync with a set that cannot be made: %v", err)
	}
	chains := netnstest.SaveChains(t, "filter")
	in.MaxSets = 0
	for _, l := range strings.Split(text(Build(in)), "\n") {
		if strings.HasPrefix(l, "-A ") && !slices.Contains(chains[strings.Fields(l)[1]], l) {
			t.Errorf("the kernel lacks %q", l)
		}
	}
	checkSets(t, iptsync.IPv4, nil)
}
