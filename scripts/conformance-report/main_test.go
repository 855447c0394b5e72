package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	specs, err := readReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	r := summarize(specs)
	if got, want := r.Total, (counts{Passed: 1, Failed: 2, Skipped: 1}); got != want {
		t.Errorf("total = %+v, want %+v (the filtered spec and the suite node are not counted)", got, want)
	}
	for sig, want := range map[string]counts{"sig-node": {1, 1, 0}, "sig-network": {0, 1, 1}} {
		if got := r.BySig[sig]; got == nil || *got != want {
			t.Errorf("%s = %+v, want %+v", sig, got, want)
		}
	}
	if len(r.BySig) != 2 {
		t.Errorf("sigs = %v, want sig-node and sig-network only", r.sigs())
	}
	if got, want := r.Failures[1].firstLine(), "pods \"x\" is forbidden: `sysctl`"; got != want {
		t.Errorf("first line = %q, want %q", got, want)
	}
}

func TestRunReplacesOnlyTheSection(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "conformance.md")
	before := "# Conformance\n\nintro\n\n" + beginMarker + "\nold results\n" + endMarker + "\n\n## Exceptions\n\nkept\n"
	if err := os.WriteFile(doc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-out", doc, "-commit", "abc1234", "-version", "v1.37.2", "-minutes", "7", "testdata/report.json"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "1 of 4 passed, 2 failed, 1 skipped\n") {
		t.Errorf("summary:\n%s", out.String())
	}
	data, _ := os.ReadFile(doc)
	got := string(data)
	for _, want := range []string{
		"# Conformance\n\nintro\n\n" + beginMarker + "\n## Last run: ",
		"orch abc1234, e2e.test v1.37.2",
		": 7 minutes. **1 of 4 passed**, 2 failed, 1 skipped.",
		"| sig-network | 0 | 1 | 1 |",
		`- [sig-node] Pods should run with a \*sysctl\* \| x [Conformance]` + "  \n  `pods \"x\" is forbidden: 'sysctl'`",
		"- [sig-network] DNS should resolve [Conformance]  \n  `Only supported for providers [gce]`",
		endMarker + "\n\n## Exceptions\n\nkept\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("document lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old results") {
		t.Errorf("the old section was kept:\n%s", got)
	}
}

func TestRunWithoutMarkers(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "conformance.md")
	os.WriteFile(doc, []byte("# no markers\n"), 0o644)
	err := run([]string{"-out", doc, "testdata/report.json"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "section to replace") {
		t.Fatalf("err = %v, want a missing-section error", err)
	}
	if data, _ := os.ReadFile(doc); string(data) != "# no markers\n" {
		t.Errorf("the document changed: %q", data)
	}
}
