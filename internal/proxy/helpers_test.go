package proxy

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orch/internal/cidr"
	"orch/internal/goldentest"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"
)

// Test fixtures share one node.
const (
	testNode  = "node-a"
	testCIDR  = "10.42.0.0/16"
	testCIDR6 = "fd00:42::/56"
)

var (
	testNodeIP  = net.ParseIP("192.168.0.2")
	testNodeIP6 = net.ParseIP("2001:db8:1::2")
)

// prefixes is a --cluster-cidr value as the agent hands it over ("": none).
func prefixes(t *testing.T, value string) []netip.Prefix {
	t.Helper()
	if value == "" {
		return nil
	}
	ps, err := cidr.ParseList("--cluster-cidr", value)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

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

// loadFamilyInput is loadInput as the Proxier gives it to the syncer of
// family f: for IPv6, with the IPv6 cluster CIDR and the node's addresses
// of both families.
func loadFamilyInput(t testing.TB, name string, f v1.IPFamily) Input {
	t.Helper()
	in := loadInput(t, name)
	if f == v1.IPv6Protocol {
		in.Family, in.ClusterCIDR = f, testCIDR6
		in.NodeIPs = append(in.NodeIPs, testNodeIP6)
	}
	return in
}

// bothFamilies renders an input for each family, one after the other,
// each under a header line naming its family.
func bothFamilies(t testing.TB, name string, render func(Input) string) []byte {
	t.Helper()
	var b strings.Builder
	for _, f := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		b.WriteString("# " + string(f) + "\n")
		b.WriteString(render(loadFamilyInput(t, name, f)))
	}
	return []byte(b.String())
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name+".golden"), got)
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
