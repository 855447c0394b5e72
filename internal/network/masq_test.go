package network

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeIPTables keeps chains as lists of rules, each its rulespec joined
// with spaces ("-A" lines are made from them the way iptables -S prints).
type fakeIPTables struct {
	chains map[string][]string // "table/chain" → rules
	writes int                 // calls that changed something
}

var _ iptablesRunner = (*fakeIPTables)(nil)

func newFakeIPTables() *fakeIPTables {
	return &fakeIPTables{chains: map[string][]string{
		"nat/POSTROUTING": {"-s 172.17.0.0/16 ! -o docker0 -j MASQUERADE"},
		"filter/FORWARD":  {"-j DOCKER-USER"},
	}}
}

func (f *fakeIPTables) chain(table, chain string) ([]string, error) {
	rules, ok := f.chains[table+"/"+chain]
	if !ok {
		return nil, errors.New("iptables: chain " + chain + " does not exist")
	}
	return rules, nil
}

func (f *fakeIPTables) Exists(table, chain string, spec ...string) (bool, error) {
	rules, err := f.chain(table, chain)
	return slices.Contains(rules, strings.Join(spec, " ")), err
}

func (f *fakeIPTables) Append(table, chain string, spec ...string) error {
	rules, err := f.chain(table, chain)
	if err == nil {
		f.writes++
		f.chains[table+"/"+chain] = append(rules, strings.Join(spec, " "))
	}
	return err
}

func (f *fakeIPTables) DeleteIfExists(table, chain string, spec ...string) error {
	rules, err := f.chain(table, chain)
	if i := slices.Index(rules, strings.Join(spec, " ")); i >= 0 {
		f.writes++
		f.chains[table+"/"+chain] = slices.Delete(rules, i, i+1)
	}
	return err
}

func (f *fakeIPTables) List(table, chain string) ([]string, error) {
	rules, err := f.chain(table, chain)
	out := []string{"-N " + chain}
	for _, r := range rules {
		out = append(out, "-A "+chain+" "+r)
	}
	return out, err
}

func (f *fakeIPTables) ChainExists(table, chain string) (bool, error) {
	_, ok := f.chains[table+"/"+chain]
	return ok, nil
}

func (f *fakeIPTables) ClearChain(table, chain string) error {
	f.writes++
	f.chains[table+"/"+chain] = nil
	return nil
}

func (f *fakeIPTables) ClearAndDeleteChain(table, chain string) error {
	f.writes++
	delete(f.chains, table+"/"+chain)
	return nil
}

func TestMasqChains(t *testing.T) {
	chains := masqChains("10.42.0.0/16", true)
	got := map[string][]string{}
	for _, c := range chains {
		got[c.Table+"/"+c.Parent] = []string{strings.Join(c.Jump, " ")}
		for _, r := range c.Rules {
			got[c.Table+"/"+c.Name] = append(got[c.Table+"/"+c.Name], strings.Join(r, " "))
		}
	}
	want := map[string][]string{
		"nat/POSTROUTING": {`-m comment --comment orch: cluster network NAT -j ORCH-POSTROUTING`},
		"nat/ORCH-POSTROUTING": {
			`-s 10.42.0.0/16 -d 10.42.0.0/16 -m comment --comment orch: pod to pod, no NAT -j RETURN`,
			`-s 10.42.0.0/16 ! -d 224.0.0.0/4 -m comment --comment orch: pods to outside the cluster CIDR -j MASQUERADE --random-fully`,
		},
		"filter/FORWARD": {`-m comment --comment orch: forward pod traffic -j ORCH-FORWARD`},
		"filter/ORCH-FORWARD": {
			`-s 10.42.0.0/16 -m comment --comment orch: from pods -j ACCEPT`,
			`-d 10.42.0.0/16 -m comment --comment orch: to pods -j ACCEPT`,
		},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s:\n got %q\nwant %q", k, got[k], w)
		}
	}
	if r := masqChains("10.42.0.0/16", false)[0].Rules[1]; slices.Contains(r, "--random-fully") {
		t.Errorf("without random-fully support: %q", r)
	}
}

func TestEnsureChains(t *testing.T) {
	chains := masqChains("10.42.0.0/16", true)
	for _, tc := range []struct {
		name    string
		tamper  func(f *fakeIPTables)
		changed bool
	}{
		{"in place: nothing written", func(*fakeIPTables) {}, false},
		{"jump removed", func(f *fakeIPTables) { f.chains["filter/FORWARD"] = []string{"-j DOCKER-USER"} }, true},
		{"chain removed", func(f *fakeIPTables) { delete(f.chains, "nat/"+MasqChain) }, true},
		{"rule added by hand", func(f *fakeIPTables) {
			f.chains["filter/"+ForwardChain] = append(f.chains["filter/"+ForwardChain], "-j DROP")
		}, true},
		{"rules swapped", func(f *fakeIPTables) { slices.Reverse(f.chains["nat/"+MasqChain]) }, true},
		{"old cluster CIDR", func(f *fakeIPTables) {
			f.chains["filter/"+ForwardChain][0] = strings.Replace(f.chains["filter/"+ForwardChain][0], "10.42.", "10.99.", 1)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIPTables()
			if changed, err := ensureChains(f, chains); err != nil || !changed {
				t.Fatalf("first ensureChains: changed %v, %v; want a change", changed, err)
			}
			want := clone(f.chains)
			tc.tamper(f)
			f.writes = 0
			changed, err := ensureChains(f, chains)
			if err != nil || changed != tc.changed {
				t.Fatalf("ensureChains after tampering: changed %v, %v; want %v", changed, err, tc.changed)
			}
			if !tc.changed && f.writes != 0 {
				t.Errorf("%d writes with everything in place", f.writes)
			}
			for k, w := range want {
				if !slices.Equal(f.chains[k], w) {
					t.Errorf("%s:\n got %q\nwant %q", k, f.chains[k], w)
				}
			}
		})
	}
	// The jumps come last, below rules that were there before (the
	// Service proxy's REJECT must see pod traffic first).
	f := newFakeIPTables()
	if _, err := ensureChains(f, chains); err != nil {
		t.Fatal(err)
	}
	if got := f.chains["nat/POSTROUTING"]; len(got) != 2 || !strings.HasSuffix(got[1], "-j "+MasqChain) {
		t.Errorf("POSTROUTING = %q; want Docker's rule, then the jump to %s", got, MasqChain)
	}
	if got := f.chains["filter/FORWARD"]; len(got) != 2 || !strings.HasSuffix(got[1], "-j "+ForwardChain) {
		t.Errorf("FORWARD = %q; want the rule that was there, then the jump to %s", got, ForwardChain)
	}
}

func clone(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

func TestDeleteChains(t *testing.T) {
	f := newFakeIPTables()
	foreign := clone(f.chains)
	if _, err := ensureChains(f, masqChains("10.42.0.0/16", true)); err != nil {
		t.Fatal(err)
	}
	// Which cluster CIDR the rules were made for does not matter.
	for range 2 { // and twice is fine
		if err := deleteChains(f, masqChains("0.0.0.0/0", false)); err != nil {
			t.Fatal(err)
		}
		if len(f.chains) != len(foreign) {
			t.Errorf("chains left: %q; want only %q", f.chains, foreign)
		}
		for k, w := range foreign {
			if !slices.Equal(f.chains[k], w) {
				t.Errorf("%s = %q; want %q as before", k, f.chains[k], w)
			}
		}
	}
}

func TestHostSettings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bridge     bool         // net/bridge exists
		modprobe   func() error // nil: no modprobe
		loads      bool         // modprobe makes net/bridge
		wantWarn   string
		wantBridge string // bridge-nf-call-iptables after
	}{
		{name: "both set", bridge: true, wantBridge: "1\n"},
		{name: "br_netfilter loaded by modprobe", loads: true, modprobe: func() error { return nil }, wantBridge: "1\n"},
		{name: "no modprobe", wantWarn: "load br_netfilter (modprobe br_netfilter"},
		{name: "modprobe fails", modprobe: func() error { return errors.New("module not found") }, wantWarn: "could not load the br_netfilter kernel module (module not found)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(p, v string) {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("net/ipv4/ip_forward", "0\n")
			if tc.bridge {
				write("net/bridge/bridge-nf-call-iptables", "0\n")
			}
			var logs bytes.Buffer
			h := hostSettings{procSys: dir, modprobe: tc.modprobe, log: slog.New(slog.NewTextHandler(&logs, nil))}
			if tc.loads {
				h.modprobe = func() error { write("net/bridge/bridge-nf-call-iptables", "0\n"); return nil }
			}
			warning, err := h.ensure()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(warning, tc.wantWarn) || (tc.wantWarn == "") != (warning == "") {
				t.Errorf("warning %q; want %q", warning, tc.wantWarn)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "net/ipv4/ip_forward")); string(got) != "1\n" {
				t.Errorf("ip_forward = %q; want 1", got)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "net/bridge/bridge-nf-call-iptables"))
			if string(got) != tc.wantBridge {
				t.Errorf("bridge-nf-call-iptables = %q; want %q", got, tc.wantBridge)
			}
			if !strings.Contains(logs.String(), "name=net.ipv4.ip_forward value=1 was=0") {
				t.Errorf("log does not say ip_forward was set:\n%s", logs.String())
			}
		})
	}
	// No /proc/sys/net/ipv4/ip_forward at all: an error that says what failed.
	h := hostSettings{procSys: t.TempDir(), log: slog.New(slog.DiscardHandler)}
	if _, err := h.ensure(); err == nil || !strings.Contains(err.Error(), "net.ipv4.ip_forward=1") {
		t.Errorf("ensure without /proc/sys: %v; want an error about net.ipv4.ip_forward", err)
	}
}
