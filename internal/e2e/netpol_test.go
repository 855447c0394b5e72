package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
	"orch/internal/network"
)

// TestNetworkPolicy is issue 22's first acceptance on two nodes: a default
// deny of ingress in namespace a keeps b's pods (and a's own) out of a's
// web pods; a policy allowing namespace b on port 8080 lets exactly that
// through, on one node and across nodes; an egress policy in b allowing
// everything but one node's pod range blocks that range; deleting the
// policies restores all traffic.
func TestNetworkPolicy(t *testing.T) {
	networkPolicy(t, startNetCluster(t, network.BackendVXLAN, 86))
}

// TestNetworkPolicyNFTables is TestNetworkPolicy with the Service proxy in
// nftables mode: the policies (iptables) see the traffic after the nft
// table's DNAT as they do after iptables mode's.
func TestNetworkPolicyNFTables(t *testing.T) {
	networkPolicy(t, startNetClusterMode(t, network.BackendVXLAN, "nftables", 89))
}

func networkPolicy(t *testing.T, c *netCluster) {
	// a/web-<node> serves 8080 and 9090; a/client and b/client-<node>
	// ask them.
	var objs strings.Builder
	objs.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n")
	pod := func(ns, name, node, app, script string) {
		fmt.Fprintf(&objs, `---
apiVersion: v1
kind: Pod
metadata: {namespace: %s, name: %s, labels: {app: %s}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sh, -c, %q]}
`, ns, name, app, node, images.BusyboxRef, script)
	}
	serve := "mkdir -p /www && echo $(hostname) > /www/who && httpd -p 9090 -h /www && exec httpd -f -p 8080 -h /www"
	for _, n := range c.nodes {
		pod("a", "web-"+n, n, "web", serve)
		pod("b", "client-"+n, n, "client", "exec sleep 1000000000")
	}
	pod("a", "client", c.nodes[0], "client", "exec sleep 1000000000")
	c.s.KubectlIn(t, objs.String(), "apply", "-f", "-")
	ip := map[string]string{} // web pod's node → its address
	for _, n := range c.nodes {
		for _, name := range []string{"a/web-" + n, "b/client-" + n} {
			ns, pn, _ := strings.Cut(name, "/")
			p := waitPodIn(t, c, ns, pn)
			if pn == "web-"+n {
				ip[n] = p.Status.PodIP
			}
		}
	}
	waitPodIn(t, c, "a", "client")
	// The web pods' Service: policies see its traffic after the proxy's
	// DNAT, at the pods' address and port.
	c.s.Kubectl(t, "create", "service", "clusterip", "web", "-n", "a", "--tcp=80:8080")
	c.s.Kubectl(t, "set", "selector", "service", "web", "-n", "a", "app=web")
	svcIP := c.s.Kubectl(t, "get", "service", "web", "-n", "a", "-o", "jsonpath={.spec.clusterIP}")

	// reach reports whether ns/pod gets an answer from the web pod of
	// node on port.
	reach := func(ns, pod, node string, port int) bool {
		if node == "service" {
			r := c.s.Run(t, Cmd{Args: []string{"exec", "-n", ns, pod, "--", "timeout", "3", "wget", "-O-", fmt.Sprintf("http://%s:%d/who", svcIP, port)}})
			return r.Code == 0 && strings.Contains(r.Stdout, "web-")
		}
		r := c.s.Run(t, Cmd{Args: []string{"exec", "-n", ns, pod, "--", "timeout", "3", "wget", "-O-", fmt.Sprintf("http://%s:%d/who", ip[node], port)}})
		return r.Code == 0 && strings.Contains(r.Stdout, "web-"+node)
	}
	type probe struct {
		ns, pod, node string
		port          int
		want          bool
	}
	// expect waits until every probe answers as wanted.
	expect := func(what string, probes ...probe) {
		t.Helper()
		eventually(t, 30*time.Second, func() string {
			var wrong []string
			for _, p := range probes {
				if got := reach(p.ns, p.pod, p.node, p.port); got != p.want {
					wrong = append(wrong, fmt.Sprintf("%s/%s → %s:%d reached=%v", p.ns, p.pod, p.node, p.port, got))
				}
			}
			if len(wrong) > 0 {
				return what + ": " + strings.Join(wrong, "; ")
			}
			return ""
		})
	}
	a, b := c.nodes[0], c.nodes[1]
	expect("before any policy",
		probe{"b", "client-" + a, a, 8080, true}, probe{"b", "client-" + a, b, 9090, true}, probe{"a", "client", b, 8080, true},
		probe{"a", "client", "service", 80, true})

	c.s.KubectlIn(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {namespace: a, name: deny}
spec: {podSelector: {}}
`, "apply", "-f", "-")
	expect("default deny in a",
		probe{"b", "client-" + a, a, 8080, false}, probe{"b", "client-" + a, b, 8080, false},
		probe{"b", "client-" + b, b, 8080, false}, probe{"a", "client", a, 8080, false})

	c.s.KubectlIn(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {namespace: a, name: from-b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}]
    ports: [{port: 8080}]
`, "apply", "-f", "-")
	expect("b allowed on 8080",
		probe{"b", "client-" + a, a, 8080, true}, probe{"b", "client-" + a, b, 8080, true}, // same node, across nodes
		probe{"b", "client-" + b, a, 8080, true},
		probe{"b", "client-" + a, a, 9090, false}, probe{"b", "client-" + a, b, 9090, false}, // not another port
		probe{"a", "client", a, 8080, false}, probe{"a", "client", b, 8080, false}, // nor another namespace
		probe{"b", "client-" + b, "service", 80, true}, probe{"a", "client", "service", 80, false}) // through the Service too
	// The peers of from-b are one ipset on each node, with b's pods.
	var bPods []string
	for _, n := range c.nodes {
		bPods = append(bPods, waitPodIn(t, c, "b", "client-"+n).Status.PodIP)
	}
	slices.Sort(bPods)
	for _, n := range c.nodes {
		sets := c.ipsets(t, n)
		var matched []string
		for _, r := range strings.Split(c.inNode(t, n, "iptables", "-S"), "\n") {
			if _, after, ok := strings.Cut(r, "--match-set "); ok && strings.Contains(r, "--dport 8080") {
				name := strings.Fields(after)[0]
				matched = append(matched, name)
				if got := slices.Sorted(slices.Values(sets[name])); !slices.Equal(got, bPods) {
					t.Errorf("node %s: set %s holds %v, want b's pods %v", n, name, got, bPods)
				}
			}
		}
		if len(matched) == 0 {
			t.Errorf("node %s: no rule for port 8080 matches a set; sets %v", n, sets)
		}
	}

	far, err := c.client.CoreV1().Nodes().Get(context.Background(), b, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.s.KubectlIn(t, fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {namespace: b, name: not-%s}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [%s]}}]
`, b, far.Spec.PodCIDR), "apply", "-f", "-")
	expect("b's egress excepts "+b+"'s pods",
		probe{"b", "client-" + a, a, 8080, true}, probe{"b", "client-" + b, a, 8080, true},
		probe{"b", "client-" + a, b, 8080, false}, probe{"b", "client-" + b, b, 8080, false})

	start := time.Now()
	c.s.Kubectl(t, "delete", "networkpolicy", "-n", "a", "--all")
	c.s.Kubectl(t, "delete", "networkpolicy", "-n", "b", "--all")
	deleted := time.Since(start)
	// When the rules went, by each node's tables.
	for _, n := range c.nodes {
		eventually(t, 10*time.Second, func() string {
			if rules := c.inNode(t, n, "iptables", "-S", "KUBE-NP-FORWARD"); strings.Contains(rules, "-j KUBE-NP-IN-") || strings.Contains(rules, "-j KUBE-NP-OUT-") {
				return "node " + n + " still isolates pods:\n" + rules
			}
			return ""
		})
		t.Logf("node %s: isolation gone %v after the first delete (the deletes took %v)", n, time.Since(start).Round(10*time.Millisecond), deleted.Round(10*time.Millisecond))
	}
	expect("no policies",
		probe{"b", "client-" + a, a, 9090, true}, probe{"b", "client-" + b, b, 9090, true}, probe{"a", "client", b, 8080, true})
}

// waitPodIn waits for ns/name to run with an address and returns it.
func waitPodIn(t *testing.T, c *netCluster, ns, name string) *corev1.Pod {
	t.Helper()
	return waitPodNS(t, c.client, ns, name, 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			return fmt.Sprintf("%s/%s: phase %s, IP %q; %s", ns, name, p.Status.Phase, p.Status.PodIP, containerStates(p))
		}
		return ""
	})
}

// containerStates says, for a failure message, where each container of p
// is: running, or waiting or terminated and why.
func containerStates(p *corev1.Pod) string {
	var out []string
	for _, cs := range p.Status.ContainerStatuses {
		state := "no state"
		switch s := cs.State; {
		case s.Running != nil:
			state = "running"
		case s.Waiting != nil:
			state = fmt.Sprintf("waiting (%s: %s)", s.Waiting.Reason, s.Waiting.Message)
		case s.Terminated != nil:
			state = fmt.Sprintf("terminated (%s, exit %d: %s)", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
		}
		out = append(out, fmt.Sprintf("%s %s, %d restarts", cs.Name, state, cs.RestartCount))
	}
	if len(out) == 0 {
		return "no container statuses"
	}
	return strings.Join(out, "; ")
}
