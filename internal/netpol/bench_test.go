package netpol

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/netnstest"
)

// peersInput is a cluster of n peer pods in namespace b (on other nodes)
// and 10 web pods of namespace a on n1, which one policy isolates and
// opens to b's pods on ports 8080 and 8443.
func peersInput(n int) Input {
	in := Input{NodeName: "n1", Namespaces: []*v1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"kubernetes.io/metadata.name": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"kubernetes.io/metadata.name": "b"}}}}}
	pod := func(ns, name, node, ip, app string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:   v1.PodSpec{NodeName: node},
			Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}}}}
	}
	for i := range 10 {
		in.Pods = append(in.Pods, pod("a", fmt.Sprintf("web-%d", i), "n1", fmt.Sprintf("10.42.0.%d", 10+i), "web"))
	}
	for i := range n {
		in.Pods = append(in.Pods, pod("b", fmt.Sprintf("client-%d", i), fmt.Sprintf("n%d", 2+i%50), fmt.Sprintf("10.44.%d.%d", i/250, 1+i%250), "client"))
	}
	ports := []networkingv1.NetworkPolicyPort{{Port: &intstr.IntOrString{IntVal: 8080}}, {Port: &intstr.IntOrString{IntVal: 8443}}}
	in.Policies = []*networkingv1.NetworkPolicy{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "from-b"},
		Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: ports,
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "b"}}}}}}}}}
	return in
}

// BenchmarkPeerChange is the time from a peer pod's new address to the
// rules that allow it being written, with ipsets (a set member changes)
// and without (the policy's chain, a rule per peer and port, is
// rewritten), in the test's private network namespace.
func BenchmarkPeerChange(b *testing.B) {
	netnstest.Require(b)
	for _, sets := range []bool{true, false} {
		mode := "ipsets"
		if !sets {
			mode = "addresses"
		}
		for _, n := range []int{1000, 5000} {
			b.Run(fmt.Sprintf("%s/peers=%d", mode, n), func(b *testing.B) { benchmarkPeerChange(b, n, sets) })
		}
	}
}

func benchmarkPeerChange(b *testing.B, n int, sets bool) {
	if sets && !ipsetsAvailable() {
		b.Skip("no ip_set in this kernel")
	}
	in := peersInput(n)
	e, err := newEnforcer(Config{NodeName: "n1"}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), kernelWriter, sets)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := Cleanup(nil); err != nil {
			b.Error(err)
		}
	}()
	if err := e.sync(in); err != nil {
		b.Fatal(err)
	}
	peer := in.Pods[len(in.Pods)/2].DeepCopy()
	in.Pods[len(in.Pods)/2] = peer
	addrs := []string{peer.Status.PodIP, "10.45.0.1"}
	i := 0
	for b.Loop() {
		i++
		peer.Status.PodIP, peer.Status.PodIPs = addrs[i%2], []v1.PodIP{{IP: addrs[i%2]}}
		if err := e.sync(in); err != nil {
			b.Fatal(err)
		}
	}
	in.MaxSets = e.families[0].maxSets
	b.ReportMetric(float64(len(rulesOfChain(text(Build(in)), chainName(prefixPolicy, "a/from-b/ingress")))), "policy-rules")
}
