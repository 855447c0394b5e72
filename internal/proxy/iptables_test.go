package proxy

import (
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// allCases merges the golden inputs into one, so that the real
// iptables-restore must accept every kind of rule the proxy writes.
func allCases(t *testing.T) Input {
	in := Input{NodeName: testNode, NodeIPs: loadInput(t, "clusterip").NodeIPs, ClusterCIDR: testCIDR}
	for _, name := range []string{"upstream-overall", "clusterip", "no-endpoints", "nodeport", "loadbalancer",
		"external-ips", "external-local", "internal-local", "affinity", "terminating", "protocols", "skipped"} {
		c := loadInput(t, name)
		in.Services = append(in.Services, c.Services...)
		in.Slices = append(in.Slices, c.Slices...)
	}
	return in
}

func newRealSyncer(t *testing.T) *syncer {
	t.Helper()
	d, err := newIPTablesDriver(v1.IPv4Protocol)
	if err != nil {
		t.Fatal(err)
	}
	return newSyncer(d, netlinkConntrack{family: unix.AF_INET}, time.Hour)
}

// serviceChains returns the per-service chains of the nat table and their rules.
func serviceChains(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for n, rules := range saveChains(t, "nat") {
		if isServiceChain(n) {
			out[n] = rules
		}
	}
	return out
}

func countJumps(t *testing.T) int {
	n := 0
	for _, table := range []string{"nat", "filter"} {
		for _, c := range []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"} {
			for _, r := range saveChains(t, table)[c] {
				if strings.Contains(r, "-j KUBE-") {
					n++
				}
			}
		}
	}
	return n
}

func TestIPTablesLifecycle(t *testing.T) {
	requireNetns(t)
	flushAll(t)
	t.Cleanup(func() { flushAll(t) })
	addForeign(t)

	s := newRealSyncer(t)
	in := allCases(t)
	res, err := s.sync(time.Now(), in)
	if err != nil {
		t.Fatalf("full sync: %v", err)
	}
	if !res.Full || res.Rules == 0 {
		t.Fatalf("first sync: %+v", res)
	}
	nat := saveChains(t, "nat")
	for _, c := range []string{"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ",
		portChainName(prefixSVC, "default/web:http", "tcp"), portChainName(prefixSVL, "default/here:http", "tcp"),
		portChainName(prefixEXT, "default/shop:http", "tcp"), portChainName(prefixFW, "default/lb:http", "tcp"),
		endpointChainName("default/web:http", "tcp", "10.42.1.5:8080")} {
		if _, ok := nat[c]; !ok {
			t.Errorf("iptables-save -t nat lacks %s", c)
		}
	}
	if got := len(jumpsOf(false)); countJumps(t) != got {
		t.Errorf("%d jump rules, want %d", countJumps(t), got)
	}
	filter := saveChains(t, "filter")
	if !slices.ContainsFunc(filter["KUBE-SERVICES"], func(r string) bool { return strings.Contains(r, "REJECT --reject-with icmp-port-unreachable") }) {
		t.Errorf("filter KUBE-SERVICES has no REJECT rule: %q", filter["KUBE-SERVICES"])
	}

	// A second full sync keeps one copy of each jump rule.
	s.NeedFull()
	if _, err := s.sync(time.Now(), in); err != nil {
		t.Fatal(err)
	}
	if got := countJumps(t); got != len(jumpsOf(false)) {
		t.Errorf("after two full syncs: %d jump rules, want %d", got, len(jumpsOf(false)))
	}

	// One endpoint changes: only that service's chains change.
	before := serviceChains(t)
	changed := allCases(t)
	for _, sl := range changed.Slices {
		if sl.Name == "web-b" {
			sl.Endpoints[0].Addresses = []string{"10.42.3.4"}
		}
	}
	res, err = s.sync(time.Now(), changed)
	if err != nil || res.Full {
		t.Fatalf("partial sync: %+v, %v", res, err)
	}
	after := serviceChains(t)
	webSVC := portChainName(prefixSVC, "default/web:http", "tcp")
	oldSEP := endpointChainName("default/web:http", "tcp", "10.42.3.3:8080")
	newSEP := endpointChainName("default/web:http", "tcp", "10.42.3.4:8080")
	var diff []string
	for n := range before {
		if !reflect.DeepEqual(before[n], after[n]) {
			diff = append(diff, n)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			diff = append(diff, n)
		}
	}
	slices.Sort(diff)
	if want := sorted([]string{webSVC, oldSEP, newSEP}); !reflect.DeepEqual(diff, want) {
		t.Errorf("chains changed by one endpoint change: %v, want %v", diff, want)
	}
	if res.ChainsWritten != 2 || res.ChainsDeleted != 1 {
		t.Errorf("partial sync wrote %d and deleted %d chains, want 2 and 1", res.ChainsWritten, res.ChainsDeleted)
	}

	// A firewall reload flushes the built-in chains: the periodic check
	// puts the jump rules back and, since the reload may have flushed the
	// proxy's chains too, rewrites everything.
	run(t, "iptables", "-t", "nat", "-F", "PREROUTING")
	s.JumpsDue = true
	if res, err := s.sync(time.Now(), changed); err != nil || !res.Full || countJumps(t) != len(jumpsOf(false)) {
		t.Errorf("after PREROUTING was flushed: %+v, %v, %d jump rules, want a full sync and %d", res, err, countJumps(t), len(jumpsOf(false)))
	}

	// Someone deletes every chain. A sync with no change writes nothing,
	// so it does not notice; the next jump check (every SyncPeriod) does,
	// and its full sync restores all.
	flushAll(t)
	addForeign(t)
	if res, err := s.sync(time.Now(), changed); err != nil || res.Full || res.Rules != 0 {
		t.Errorf("unchanged sync onto flushed tables: %+v, %v; want a partial sync writing nothing", res, err)
	}
	s.JumpsDue = true
	if res, err := s.sync(time.Now(), changed); err != nil || !res.Full {
		t.Fatalf("sync at the jump check: %+v, %v; want a successful full sync", res, err)
	}
	if got := serviceChains(t); !reflect.DeepEqual(got, after) {
		t.Errorf("after recovery the per-service chains differ from before the flush: %v vs %v", keys(got), keys(after))
	}

	// Every service gone: no per-service chain is left.
	if _, err := s.sync(time.Now(), Input{NodeName: testNode, ClusterCIDR: testCIDR}); err != nil {
		t.Fatal(err)
	}
	if left := serviceChains(t); len(left) != 0 {
		t.Errorf("per-service chains left after all services went: %v", keys(left))
	}

	// Cleanup: nothing of ours is left; the foreign rules are.
	if _, err := s.sync(time.Now(), in); err != nil { // something to clean
		t.Fatal(err)
	}
	if err := Cleanup(quiet); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	for _, table := range []string{"nat", "filter"} {
		for n, rules := range saveChains(t, table) {
			if strings.HasPrefix(n, "KUBE-") {
				t.Errorf("chain %s left in %s", n, table)
			}
			for _, r := range rules {
				if strings.Contains(r, "KUBE-") {
					t.Errorf("rule left in %s: %s", table, r)
				}
			}
		}
	}
	if !slices.Contains(saveChains(t, "nat")["POSTROUTING"], "-A POSTROUTING -s 10.99.0.0/16 -j MASQUERADE") {
		t.Error("Cleanup removed another program's nat rule")
	}
	if !slices.Contains(saveChains(t, "filter")["INPUT"], "-A INPUT -j FOREIGN") {
		t.Error("Cleanup removed another program's filter rule")
	}
	// Cleanup again finds nothing and succeeds.
	if err := Cleanup(quiet); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
}

// TestIPTablesRecoversStaleChains: a proxy that starts over (empty memory)
// deletes the chains a previous run left behind on its first, full sync.
func TestIPTablesRecoversStaleChains(t *testing.T) {
	requireNetns(t)
	flushAll(t)
	t.Cleanup(func() { flushAll(t) })
	old := newRealSyncer(t)
	if _, err := old.sync(time.Now(), loadInput(t, "clusterip")); err != nil {
		t.Fatal(err)
	}
	fresh := newRealSyncer(t)
	in := without(loadInput(t, "clusterip"), "metrics")
	if _, err := fresh.sync(time.Now(), in); err != nil {
		t.Fatal(err)
	}
	if _, ok := serviceChains(t)[portChainName(prefixSVC, "kube-system/metrics", "tcp")]; ok {
		t.Error("a stale chain of a previous run survived the first full sync")
	}
	if got := countJumps(t); got != len(jumpsOf(false)) {
		t.Errorf("%d jump rules, want %d", got, len(jumpsOf(false)))
	}
}

// TestIPTablesManyChains: a table past iptsync.CacheHintChains syncs, and Cleanup
// removes it all.
func TestIPTablesManyChains(t *testing.T) {
	requireNetns(t)
	flushAll(t)
	t.Cleanup(func() { flushAll(t) })
	if _, err := newRealSyncer(t).sync(time.Now(), syntheticInput(300, 2)); err != nil {
		t.Fatal(err)
	}
	if got := len(serviceChains(t)); got != 900 {
		t.Fatalf("%d per-service chains, want 900", got)
	}
	if err := Cleanup(quiet); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"nat", "filter"} {
		for n := range saveChains(t, table) {
			if strings.HasPrefix(n, "KUBE-") {
				t.Fatalf("chain %s left in %s after Cleanup", n, table)
			}
		}
	}
}

// addForeign adds another program's rules, which the proxy must leave alone.
func addForeign(t *testing.T) {
	run(t, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.99.0.0/16", "-j", "MASQUERADE")
	run(t, "iptables", "-t", "filter", "-N", "FOREIGN")
	run(t, "iptables", "-t", "filter", "-A", "FOREIGN", "-j", "ACCEPT")
	run(t, "iptables", "-t", "filter", "-A", "INPUT", "-j", "FOREIGN")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
