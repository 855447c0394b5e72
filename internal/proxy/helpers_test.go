package proxy

import (
	"bytes"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// Test fixtures share one node.
const (
	testNode = "node-a"
	testCIDR = "10.42.0.0/16"
)

var testNodeIP = net.ParseIP("192.168.0.2")

// loadInput reads testdata/<name>.yaml: Services and EndpointSlices as
// YAML documents separated by "---".
func loadInput(t testing.TB, name string) Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{NodeName: testNode, NodeIPs: []net.IP{testNodeIP}, ClusterCIDR: testCIDR}
	for i, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatalf("%s.yaml document %d: %v", name, i, err)
		}
		switch kind.Kind {
		case "Service":
			s := &v1.Service{}
			if err := yaml.UnmarshalStrict([]byte(doc), s); err != nil {
				t.Fatalf("%s.yaml document %d: %v", name, i, err)
			}
			if s.Namespace == "" {
				s.Namespace = "default"
			}
			in.Services = append(in.Services, s)
		case "EndpointSlice":
			s := &discovery.EndpointSlice{}
			if err := yaml.UnmarshalStrict([]byte(doc), s); err != nil {
				t.Fatalf("%s.yaml document %d: %v", name, i, err)
			}
			if s.Namespace == "" {
				s.Namespace = "default"
			}
			if s.AddressType == "" {
				s.AddressType = discovery.AddressTypeIPv4
			}
			in.Slices = append(in.Slices, s)
		case "":
			// only comments
		default:
			t.Fatalf("%s.yaml document %d: unexpected kind %q", name, i, kind.Kind)
		}
	}
	return in
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
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
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
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

// fullText renders rs as a first, full sync.
func fullText(rs *Ruleset) string { return string(render(rs, nil, true, nil).Data) }

// natRules returns the rule lines of chain in restore text.
func chainRules(text, chain string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "-A "+chain+" ") {
			out = append(out, l)
		}
	}
	return out
}
