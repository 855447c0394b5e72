// Package goldentest compares test output with golden files under
// testdata/, which `go test -update` rewrites (raft's testdata/ habit).
// Only test code imports it.
package goldentest

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// Check compares got with the file at path, or rewrites the file with
// -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, LineDiff(string(want), string(got)))
	}
}

// LineDiff lists the lines only in want (-) and only in got (+).
func LineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if g[l] < w[l] {
			b.WriteString("- " + l + "\n")
			w[l]--
		}
	}
	w = count(want)
	for _, l := range strings.Split(got, "\n") {
		if w[l] < g[l] {
			b.WriteString("+ " + l + "\n")
			g[l]--
		}
	}
	if b.Len() == 0 {
		return "(same lines, different order)"
	}
	return b.String()
}
