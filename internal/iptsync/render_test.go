package iptsync

import (
	"reflect"
	"strings"
	"testing"
)

func mine(c string) bool { return strings.HasPrefix(c, "MINE-") }

// TestRender: a partial render writes only changed chains and deletes
// stale ones of a table with Stale, written before or found existing.
func TestRender(t *testing.T) {
	v1 := []Table{{Name: "filter", Chains: []Chain{
		{"TOP", "-A TOP -j MINE-A\n-A TOP -j MINE-B\n"},
		{"MINE-A", "-A MINE-A -j DROP\n"},
		{"MINE-B", "-A MINE-B -j ACCEPT\n"},
	}, Stale: mine}}
	first := Render(v1, nil, true)
	if first.Changed != 3 || first.Rules != 4 || len(first.Deleted) != 0 {
		t.Fatalf("full render: %+v", first)
	}
	if again := Render(v1, first.Next, false); len(again.Data) != 0 {
		t.Errorf("nothing changed, wrote %q", again.Data)
	}
	v2 := []Table{{Name: "filter", Chains: []Chain{
		{"TOP", "-A TOP -j MINE-A\n"},
		{"MINE-A", "-A MINE-A -j DROP\n"},
	}, Stale: mine, Existing: []string{"INPUT", "MINE-A", "MINE-CRASH", "OTHER"}}}
	got := Render(v2, first.Next, false)
	want := "*filter\n:TOP - [0:0]\n:MINE-B - [0:0]\n:MINE-CRASH - [0:0]\n-A TOP -j MINE-A\n-X MINE-B\n-X MINE-CRASH\nCOMMIT\n"
	if string(got.Data) != want {
		t.Errorf("partial render:\n%s\nwant\n%s", got.Data, want)
	}
	if !reflect.DeepEqual(got.Deleted, []string{"MINE-B", "MINE-CRASH"}) || got.Changed != 1 {
		t.Errorf("deleted %v, changed %d", got.Deleted, got.Changed)
	}
	if _, ok := got.Next[Key{"filter", "MINE-B"}]; ok {
		t.Error("a deleted chain is still in Next")
	}
}

func TestCleanupText(t *testing.T) {
	got, n := CleanupText("filter", []string{"INPUT", "MINE-A", "OTHER", "MINE-B"}, mine)
	if want := "*filter\n:MINE-A - [0:0]\n:MINE-B - [0:0]\n-X MINE-A\n-X MINE-B\nCOMMIT\n"; string(got) != want || n != 2 {
		t.Errorf("CleanupText = %q, %d", got, n)
	}
}

func TestLinesAround(t *testing.T) {
	got := linesAround([]byte("a\nb\nc\nd\n"), 2, 1)
	if want := "     1  a\n     2  b\n     3  c\n"; got != want {
		t.Errorf("linesAround = %q, want %q", got, want)
	}
}

func TestFamilyTool(t *testing.T) {
	for _, tc := range []struct {
		f          Family
		name, want string
	}{
		{IPv4, "iptables-restore", "iptables-restore"},
		{IPv6, "iptables-restore", "ip6tables-restore"},
		{IPv6, "iptables-save", "ip6tables-save"},
		{IPv6, "iptables", "ip6tables"},
	} {
		if got := tc.f.tool(tc.name); got != tc.want {
			t.Errorf("%s.tool(%q) = %q, want %q", tc.f, tc.name, got, tc.want)
		}
	}
}
