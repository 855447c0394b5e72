package netpol

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"orch/internal/goldentest"
	"orch/internal/iptsync"
)

// loadInput reads testdata/<name>.yaml, a stream of Namespaces, Pods and
// NetworkPolicies.
func loadInput(t *testing.T, name, node string) Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{NodeName: node}
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s.yaml: %v", name, err)
		}
		switch o := obj.(type) {
		case *v1.Namespace:
			in.Namespaces = append(in.Namespaces, o)
		case *v1.Pod:
			in.Pods = append(in.Pods, o)
		case *networkingv1.NetworkPolicy:
			in.Policies = append(in.Policies, o)
		default:
			t.Fatalf("%s.yaml: unexpected %T", name, obj)
		}
	}
	return in
}

func text(rs *Ruleset) string {
	return string(iptsync.Render([]iptsync.Table{{Name: "filter", Chains: rs.Chains}}, nil, true).Data)
}

func TestBuildGolden(t *testing.T) {
	for _, node := range []string{"n1", "n2"} {
		t.Run(node, func(t *testing.T) {
			rs := Build(loadInput(t, "policies", node))
			goldentest.Check(t, filepath.Join("testdata", "policies-"+node+".golden"), []byte(text(rs)))
		})
	}
}

// rulesOfChain returns the rule lines of chain in restore text.
func rulesOfChain(text, chain string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "-A "+chain+" ") {
			out = append(out, strings.TrimPrefix(l, "-A "+chain+" "))
		}
	}
	return out
}

// TestBuild checks what the policies of testdata/policies.yaml mean on
// node n1, rule by rule.
func TestBuild(t *testing.T) {
	in := loadInput(t, "policies", "n1")
	out := text(Build(in))
	webIn := chainName(prefixPodIn, "a/web-1")
	clientOut := chainName(prefixPodOut, "b/client-1")
	deny := chainName(prefixPolicy, "a/deny/ingress")
	fromBlue := chainName(prefixPolicy, "a/from-blue/ingress")
	egressChain := chainName(prefixPolicy, "b/egress/egress")
	for _, tc := range []struct {
		name, chain string
		want        []string // rules that must be there
		not         []string // rules that must not
	}{
		{"established traffic passes first", chainForward, []string{"-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN"}, nil},
		{"a local pod isolated for ingress is hooked by its address", chainForward,
			[]string{`-d 10.42.1.10/32 -m comment --comment "a/web-1 ingress" -j ` + webIn,
				`-s 10.42.1.20/32 -m comment --comment "b/client-1 egress" -j ` + clientOut},
			[]string{`-d 10.42.2.10/32`, `-d 10.42.1.20/32`}},
		{"egress to the node itself is checked too", chainInput, []string{`-s 10.42.1.20/32 -m comment --comment "b/client-1 egress" -j ` + clientOut}, []string{"-d 10.42.1.10/32"}},
		{"the pod's chain: every policy selecting it, then reject", webIn, []string{
			"-j MARK --set-xmark 0x0/0x10000", "-j " + deny, "-j " + fromBlue,
			"-m mark --mark 0x10000/0x10000 -j RETURN", `-m comment --comment "network policy denies ingress of a/web-1" -j REJECT --reject-with icmp-port-unreachable`}, nil},
		{"egress: both policies", clientOut, []string{"-j " + egressChain, "-j " + chainName(prefixPolicy, "b/egress-named/egress")}, nil},
		{"egress by name to a pod peer and to a block: the pod's address alone", chainName(prefixPolicy, "b/egress-named/egress"), []string{
			"-d 10.42.2.20/32 -p tcp -m tcp --dport 9090 -j MARK --set-xmark 0x20000/0x20000", // client-2, a peer by podSelector
			"-d 10.42.1.10/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x20000/0x20000", // web-1, inside the block
		}, []string{"-d 10.42.2.10/32", "-d 10.42.1.0/24"}},
		{"a default deny allows nothing", deny, nil, []string{"-j MARK"}},
		{"namespace and pod selector together, by number and by name (resolved on the target)", fromBlue, []string{
			"-s 10.42.1.20/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s 10.42.2.20/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s 10.42.2.20/32 -d 10.42.1.10/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-s 10.42.2.20/32 -d 10.42.1.10/32 -p udp -m udp --dport 5353 -j MARK --set-xmark 0x10000/0x10000",
			"-s 192.168.0.0/16 -j " + chainName(prefixPolicy, "a/from-blue/ingress/1/0"),
		}, []string{"10.42.1.10/32 -p tcp -m tcp --dport 8081"}},
		{"an ipBlock's exceptions return before its ports mark", chainName(prefixPolicy, "a/from-blue/ingress/1/0"), []string{
			"-s 192.168.1.0/24 -j RETURN", "-p sctp -m sctp --dport 7000:7010 -j MARK --set-xmark 0x10000/0x10000"}, nil},
		{"egress: a namespace by name, DNS anywhere, a named port resolved on every pod that has it", egressChain, []string{
			"-d 10.42.1.10/32 -j MARK --set-xmark 0x20000/0x20000", "-d 10.42.2.10/32 -j MARK --set-xmark 0x20000/0x20000",
			"-p udp -m udp --dport 53 -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.42.1.10/32 -p tcp -m tcp --dport 8080 -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.42.2.10/32 -p tcp -m tcp --dport 8081 -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.42.2.20/32 -p tcp -m tcp --dport 9090 -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.0.0.0/8 -j " + chainName(prefixPolicy, "b/egress/egress/2/0"),
		}, nil},
		{"egress exceptions", chainName(prefixPolicy, "b/egress/egress/2/0"), []string{"-d 10.42.0.0/16 -j RETURN", "-j MARK --set-xmark 0x20000/0x20000"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkChain(t, out, tc.chain, tc.want, tc.not)
		})
	}
	// The egress policy is Egress only: no ingress chain for b's clients.
	if strings.Contains(out, chainName(prefixPodIn, "b/client-1")) {
		t.Error("an Egress-only policy isolated b/client-1 for ingress")
	}
}

// checkChain checks that chain in the rules text holds every rule of want
// and no rule containing one of not.
func checkChain(t *testing.T, text, chain string, want, not []string) {
	t.Helper()
	got := rulesOfChain(text, chain)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s lacks %q; has:\n%s", chain, w, strings.Join(got, "\n"))
		}
	}
	for _, n := range not {
		for _, g := range got {
			if strings.Contains(g, n) {
				t.Errorf("%s has %q, which it must not", chain, g)
			}
		}
	}
}

// TestBuildSets: with ipsets, a rule's pod peers are one set matched by
// one rule per port; ipBlocks, anyone and an egress rule's named ports
// (resolved on each peer pod) keep their rules.
func TestBuildSets(t *testing.T) {
	in := loadInput(t, "policies", "n1")
	in.MaxSets = 10
	rs := Build(in)
	out := text(rs)
	goldentest.Check(t, filepath.Join("testdata", "policies-n1-sets.golden"), []byte(out+setsText(rs.Sets)))
	fromBlue := chainName(prefixSetSrc, "a/from-blue/ingress/0/IPv4")
	toA := chainName(prefixSetDst, "b/egress/egress/0/IPv4")
	toClients := chainName(prefixSetDst, "b/egress-named/egress/0/IPv4")
	want := []Set{{Name: fromBlue, Members: []string{"10.42.1.20", "10.42.2.20"}}, {Name: toA, Members: []string{"10.42.1.10", "10.42.2.10"}}}
	slices.SortFunc(want, func(a, b Set) int { return strings.Compare(a.Name, b.Name) })
	if !slices.EqualFunc(rs.Sets, want, func(a, b Set) bool { return a.Name == b.Name && slices.Equal(a.Members, b.Members) }) {
		t.Errorf("sets %v, want %v (none for egress-named: its only port is named)", rs.Sets, want)
	}
	for _, tc := range []struct {
		name, chain string
		want, not   []string
	}{
		{"one rule per port for the set, named ports on the target", chainName(prefixPolicy, "a/from-blue/ingress"), []string{
			"-p tcp -m set --match-set " + fromBlue + " src -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-d 10.42.1.10/32 -p tcp -m set --match-set " + fromBlue + " src -m tcp --dport 8080 -j MARK --set-xmark 0x10000/0x10000",
			"-d 10.42.1.10/32 -p udp -m set --match-set " + fromBlue + " src -m udp --dport 5353 -j MARK --set-xmark 0x10000/0x10000",
			"-s 192.168.0.0/16 -j " + chainName(prefixPolicy, "a/from-blue/ingress/1/0"),
		}, []string{"10.42.1.20", "10.42.2.20"}},
		{"egress to a namespace's pods by set, named ports per pod", chainName(prefixPolicy, "b/egress/egress"), []string{
			"-m set --match-set " + toA + " dst -j MARK --set-xmark 0x20000/0x20000",
			"-d 10.42.2.10/32 -p tcp -m tcp --dport 8081 -j MARK --set-xmark 0x20000/0x20000",
		}, []string{"-d 10.42.2.10/32 -j MARK"}},
		{"egress by name to pod peers: each pod's own rule, no set", chainName(prefixPolicy, "b/egress-named/egress"), []string{
			"-d 10.42.2.20/32 -p tcp -m tcp --dport 9090 -j MARK --set-xmark 0x20000/0x20000",
		}, []string{toClients}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkChain(t, out, tc.chain, tc.want, tc.not) })
	}

	// Too many sets: a rule per address, as without ipsets.
	in.MaxSets = 1
	if got, want := Build(in), Build(Input{NodeName: in.NodeName, Policies: in.Policies, Pods: in.Pods, Namespaces: in.Namespaces}); len(got.Sets) != 0 || text(got) != text(want) {
		t.Errorf("over the limit of sets: %d sets, rules differ from those without sets: %v", len(got.Sets), text(got) != text(want))
	}
}

// TestBuildSetsStable: a pod that comes changes a set, not the chains;
// a rule's set exists even while its selectors match no pod.
func TestBuildSetsStable(t *testing.T) {
	in := loadInput(t, "policies", "n1")
	in.MaxSets = 10
	more := in
	more.Pods = append(slices.Clone(in.Pods), &v1.Pod{ // a peer of a/from-blue without ports
		ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "client-3", Labels: map[string]string{"app": "client"}},
		Spec:       v1.PodSpec{NodeName: "n2"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.42.2.30", PodIPs: []v1.PodIP{{IP: "10.42.2.30"}}}})
	a, b := Build(in), Build(more)
	if text(a) != text(b) {
		t.Errorf("the chains changed when a peer came:\n%s\nvs\n%s", text(a), text(b))
	}
	if fmt.Sprint(a.Sets) == fmt.Sprint(b.Sets) || !strings.Contains(fmt.Sprint(b.Sets), "10.42.2.30") {
		t.Errorf("sets %v, then %v: want the new peer in one", a.Sets, b.Sets)
	}

	nobody := in
	nobody.Policies = []*networkingv1.NetworkPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "from-nobody"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nobody"}}}}}}}}}
	rs := Build(nobody)
	set := chainName(prefixSetSrc, "a/from-nobody/ingress/0/IPv4")
	if len(rs.Sets) != 1 || rs.Sets[0].Name != set || len(rs.Sets[0].Members) != 0 {
		t.Errorf("sets %v, want %s and empty", rs.Sets, set)
	}
	checkChain(t, text(rs), chainName(prefixPolicy, "a/from-nobody/ingress"), []string{"-m set --match-set " + set + " src -j MARK --set-xmark 0x10000/0x10000"}, nil)
}

// setsText renders sets as ipset save would, for golden files.
func setsText(sets []Set) string {
	var w strings.Builder
	for _, s := range sets {
		w.WriteString("create " + s.Name + " hash:ip\n")
		for _, m := range s.Members {
			w.WriteString("add " + s.Name + " " + m + "\n")
		}
	}
	return w.String()
}

func TestPlanSets(t *testing.T) {
	for _, tc := range []struct {
		name          string
		want          []Set
		have          map[string][]string
		before, after []setOp
	}{
		{"nothing", nil, nil, nil, nil},
		{"a new set is created, then filled", []Set{{Name: "S", Members: []string{"10.0.0.1", "10.0.0.2"}}}, nil,
			[]setOp{{"create", "S", ""}, {"add", "S", "10.0.0.1"}, {"add", "S", "10.0.0.2"}}, nil},
		{"members come before others go", []Set{{Name: "S", Members: []string{"10.0.0.2", "10.0.0.3"}}}, map[string][]string{"S": {"10.0.0.1", "10.0.0.2"}},
			[]setOp{{"add", "S", "10.0.0.3"}, {"del", "S", "10.0.0.1"}}, nil},
		{"an unchanged set is left alone", []Set{{Name: "S", Members: []string{"10.0.0.1"}}}, map[string][]string{"S": {"10.0.0.1"}}, nil, nil},
		{"an empty set is still made", []Set{{Name: "S"}}, nil, []setOp{{"create", "S", ""}}, nil},
		{"unwanted sets go after the rules", []Set{{Name: "S"}}, map[string][]string{"S": nil, "U": {"10.0.0.9"}, "T": nil},
			nil, []setOp{{"destroy", "T", ""}, {"destroy", "U", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := planSets(tc.want, tc.have)
			if !slices.Equal(before, tc.before) || !slices.Equal(after, tc.after) {
				t.Errorf("planSets = %v, %v; want %v, %v", before, after, tc.before, tc.after)
			}
		})
	}
}
