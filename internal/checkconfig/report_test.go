package checkconfig

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	rs := []Result{
		{Name: "runc", Status: OK, Found: "1.1.5 (/usr/sbin/runc)"},
		{Name: "swap", Status: Warning, Found: "on (/dev/sda2)", Fix: "swapoff -a"},
		{Name: "CNI plugins", Status: Missing, Found: "not in /usr/lib/cni: portmap", Fix: "apt-get install containernetworking-plugins"},
	}
	var b strings.Builder
	if err := Write(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ok       runc         1.1.5 (/usr/sbin/runc)\n" +
		"warning  swap         on (/dev/sda2)\n" +
		"                      fix: swapoff -a\n" +
		"missing  CNI plugins  not in /usr/lib/cni: portmap\n" +
		"                      fix: apt-get install containernetworking-plugins\n" +
		"\n" +
		"1 ok, 1 warning, 1 missing: orch cannot run on this host until the missing features are fixed (see the fix under each).\n"
	if b.String() != want {
		t.Errorf("Write wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestSummary(t *testing.T) {
	for _, tt := range []struct {
		rs   []Result
		want string
	}{
		{[]Result{{Status: OK}, {Status: OK}}, "2 ok, 0 warnings, 0 missing: this host has everything orch needs."},
		{[]Result{{Status: OK}, {Status: Warning}, {Status: Warning}}, "1 ok, 2 warnings, 0 missing: orch can run on this host; the warnings say what works less well."},
		{[]Result{{Status: Missing}}, "0 ok, 0 warnings, 1 missing: orch cannot run on this host until the missing features are fixed (see the fix under each)."},
	} {
		if got := Summary(tt.rs); got != tt.want {
			t.Errorf("Summary = %q, want %q", got, tt.want)
		}
	}
}
