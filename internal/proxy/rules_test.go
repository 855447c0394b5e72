package proxy

import (
	"fmt"
	"strings"
	"testing"
)

// TestBuildGolden renders each testdata/<case>.yaml as a first full sync
// and compares it with testdata/<case>.golden.
func TestBuildGolden(t *testing.T) {
	for _, name := range []string{
		"upstream-overall", "clusterip", "no-endpoints", "nodeport", "loadbalancer",
		"external-ips", "external-local", "internal-local", "affinity",
		"terminating", "protocols", "skipped",
	} {
		t.Run(name, func(t *testing.T) {
			rs := Build(loadInput(t, name))
			golden(t, name, []byte(fullText(rs)))
			// The same input always gives the same bytes.
			if again := fullText(Build(loadInput(t, name))); again != fullText(rs) {
				t.Error("Build is not deterministic")
			}
		})
	}
}

// TestChainNames checks the hashes against chain names upstream kube-proxy
// gives the same service ports and endpoints.
func TestChainNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{portChainName(prefixSVC, "ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O"},
		{portChainName(prefixSVC, "ns4/svc4:p80", "tcp"), "KUBE-SVC-4SW47YFZTEDKD3PK"},
		{portChainName(prefixEXT, "ns2/svc2:p80", "tcp"), "KUBE-EXT-GNZBNJ2PO5MGZ6GT"},
		{portChainName(prefixFW, "ns5/svc5:p80", "tcp"), "KUBE-FW-NUKIZ6OKUXPJNT4C"},
		{endpointChainName("ns1/svc1:p80", "tcp", "10.180.0.1:80"), "KUBE-SEP-SXIVWICOYRO3J4NJ"},
		{endpointChainName("ns4/svc4:p80", "tcp", "10.180.0.4:80"), "KUBE-SEP-UKSFD7AGPMPPLUHC"},
	} {
		if tc.got != tc.want {
			t.Errorf("chain name %s, want %s", tc.got, tc.want)
		}
	}
}

func TestOwnedChains(t *testing.T) {
	for _, tc := range []struct {
		table, chain string
		want         bool
	}{
		{"nat", "KUBE-SERVICES", true},
		{"nat", "KUBE-SVC-XPGD46QRK7WJZT7O", true},
		{"nat", "KUBE-SEP-SXIVWICOYRO3J4NJ", true},
		{"nat", "KUBE-MARK-MASQ", true},
		{"nat", "KUBE-MARK-DROP", false}, // kubelet's
		{"nat", "KUBE-FORWARD", false},
		{"filter", "KUBE-FORWARD", true},
		{"filter", "KUBE-PROXY-FIREWALL", true},
		{"filter", "KUBE-FIREWALL", true},
		{"filter", "KUBE-KUBELET-CANARY", false},
		{"filter", "KUBE-SVC-XPGD46QRK7WJZT7O", false},
		{"filter", "CNI-FORWARD", false},
	} {
		if got := isOwnedChain(tc.table, tc.chain, false); got != tc.want {
			t.Errorf("isOwnedChain(%s, %s) = %v, want %v", tc.table, tc.chain, got, tc.want)
		}
	}
}

// TestBuildChecks states the main rules of each case directly, so that a
// golden file rewritten with -update cannot hide a regression in them.
func TestBuildChecks(t *testing.T) {
	has := func(text, substr string) func() error {
		return func() error {
			if !strings.Contains(text, substr) {
				return fmt.Errorf("missing %q", substr)
			}
			return nil
		}
	}
	hasNot := func(text, substr string) func() error {
		return func() error {
			if strings.Contains(text, substr) {
				return fmt.Errorf("unexpected %q", substr)
			}
			return nil
		}
	}
	text := func(name string) string { return fullText(Build(loadInput(t, name))) }
	web := portChainName(prefixSVC, "default/web:http", "tcp")
	here := "default/here:http"
	near := "default/near:http"
	lb := "default/lb:http"
	ci, ne, ll, el, il, af, te, pr, sk := text("clusterip"), text("no-endpoints"), text("loadbalancer"),
		text("external-local"), text("internal-local"), text("affinity"), text("terminating"), text("protocols"), text("skipped")
	for name, check := range map[string]func() error{
		"three ready endpoints, spread 1/3, 1/2, rest": func() error {
			got := chainRules(ci, web)
			if len(got) != 4 || !strings.Contains(got[1], "--probability 0.3333333333") || !strings.Contains(got[2], "--probability 0.5000000000") || strings.Contains(got[3], "statistic") {
				return fmt.Errorf("KUBE-SVC rules:\n%s", strings.Join(got, "\n"))
			}
			return nil
		},
		"not-ready endpoint left out":       hasNot(ci, "10.42.2.9"),
		"masquerade off-cluster to VIP":     has(ci, "-d 10.43.0.10 --dport 80 ! -s 10.42.0.0/16 -j KUBE-MARK-MASQ"),
		"hairpin masquerade":                has(ci, "-s 10.42.1.5 -j KUBE-MARK-MASQ"),
		"DNAT to endpoint":                  has(ci, "-m tcp -p tcp -j DNAT --to-destination 10.42.1.5:8080"),
		"unnamed port":                      has(ci, `"kube-system/metrics cluster IP"`),
		"nodeports last in KUBE-SERVICES":   func() error { return lastRule(ci, chainServices, "-j KUBE-NODEPORTS") },
		"no endpoints: REJECT cluster IP":   has(ne, `-A KUBE-SERVICES -m comment --comment "default/empty:http has no endpoints" -m tcp -p tcp -d 10.43.0.30 --dport 80 -j REJECT`),
		"no endpoints: REJECT nodeport":     has(ne, "-m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j REJECT"),
		"no endpoints: REJECT LB IP":        has(ne, "-d 203.0.113.7 --dport 80 -j REJECT"),
		"no endpoints: REJECT UDP":          has(ne, "-m udp -p udp -d 10.43.0.31 --dport 53 -j REJECT"),
		"no endpoints: no nat chains":       hasNot(ne, "KUBE-SVC-"),
		"LB source range via FW":            has(ll, "-s 198.51.100.0/24 -j "+portChainName(prefixEXT, lb, "tcp")),
		"LB IP allowed from node":           has(ll, "-s 203.0.113.50 -j "+portChainName(prefixEXT, lb, "tcp")),
		"LB firewall drop":                  has(ll, "-A KUBE-PROXY-FIREWALL"),
		"proxy-mode ingress skipped":        hasNot(ll, "203.0.113.51"),
		"loadBalancerClass ingress skipped": hasNot(ll, "203.0.113.60"),
		"loadBalancerClass nodeport kept":   has(ll, "--dport 30051 -j"),
		"0/0 source range: no firewall":     hasNot(ll, portChainName(prefixFW, "default/open:http", "tcp")),
		"ETP Local: EXT to SVL":             has(el, "-A "+portChainName(prefixEXT, here, "tcp")+" -j "+portChainName(prefixSVL, here, "tcp")),
		"ETP Local: SVL only local": func() error {
			got := chainRules(el, portChainName(prefixSVL, here, "tcp"))
			if len(got) != 1 || !strings.Contains(got[0], "10.42.1.5:8080") {
				return fmt.Errorf("KUBE-SVL rules: %q", got)
			}
			return nil
		},
		"ETP Local: no masquerade for external": hasNot(el, "masquerade traffic for "+here),
		"ETP Local: health check port":          has(el, "--dport 32000 -j ACCEPT"),
		"ETP Local: DROP without local":         has(el, `"default/away:http has no local endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30071 -j DROP`),
		"ITP Local: cluster IP to SVL":          has(il, "-d 10.43.0.80 --dport 80 -j "+portChainName(prefixSVL, near, "tcp")),
		"ITP Local: no SVC chain":               hasNot(il, portChainName(prefixSVC, near, "tcp")),
		"ITP Local: DROP without local":         has(il, `-A KUBE-SERVICES -m comment --comment "default/far:http has no local endpoints" -m tcp -p tcp -d 10.43.0.81 --dport 80 -j DROP`),
		"affinity check":                        has(af, "--rcheck --seconds 60 --reap"),
		"affinity default timeout":              has(af, "--rcheck --seconds 10800 --reap"),
		"affinity set":                          has(af, "--set -m tcp -p tcp -j DNAT"),
		"terminating fallback":                  has(te, "--to-destination 10.42.2.5:8080"),
		"terminating not serving left out":      hasNot(te, "10.42.2.6"),
		"terminating unused when ready exists":  hasNot(te, "10.42.1.6"),
		"UDP":                                   has(pr, "-m udp -p udp -j DNAT --to-destination 10.42.1.2:53"),
		"SCTP":                                  has(pr, "-m sctp -p sctp -d 10.43.0.110 --dport 3868"),
		"headless skipped":                      hasNot(sk, "headless"),
		"proxy-name skipped":                    hasNot(sk, "10.43.0.120"),
		"IPv6 skipped":                          hasNot(sk, "fd00"),
		"dual-stack IPv4 kept":                  has(sk, "-d 10.43.0.121 --dport 80"),
		"FQDN slice ignored":                    hasNot(sk, "example.com"),
	} {
		if err := check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// lastRule checks that the last rule of chain contains want.
func lastRule(text, chain, want string) error {
	got := chainRules(text, chain)
	if len(got) == 0 || !strings.Contains(got[len(got)-1], want) {
		return fmt.Errorf("last rule of %s is not %q", chain, want)
	}
	return nil
}

// TestLargeClusterDropsComments: above 1000 endpoints, per-endpoint rules
// carry no comment, as upstream.
func TestLargeClusterDropsComments(t *testing.T) {
	small := Build(syntheticInput(10, 2))
	large := Build(syntheticInput(501, 2))
	if large.Endpoints != 1002 || small.Endpoints != 20 {
		t.Fatalf("endpoints: small %d, large %d", small.Endpoints, large.Endpoints)
	}
	sep := func(rs *Ruleset) string {
		for _, c := range rs.NAT {
			if strings.HasPrefix(c.Name, prefixSEP) {
				return c.Rules
			}
		}
		return ""
	}
	if !strings.Contains(sep(small), "--comment") {
		t.Errorf("small cluster: KUBE-SEP rules lack comments:\n%s", sep(small))
	}
	if strings.Contains(sep(large), "--comment") {
		t.Errorf("large cluster: KUBE-SEP rules have comments:\n%s", sep(large))
	}
}
