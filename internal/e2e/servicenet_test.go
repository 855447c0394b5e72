package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller"
	"orch/internal/network"
)

// TestPodsAcrossNodesHostGW: with --network-backend host-gw, pods on two
// nodes reach each other by pod IP through direct routes, without NAT.
func TestPodsAcrossNodesHostGW(t *testing.T) {
	c := startNetCluster(t, network.BackendHostGW, 82)
	web := c.startWeb(t)
	far, err := c.client.CoreV1().Nodes().Get(context.Background(), "net-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	routes := c.inNode(t, "net-a", "ip", "route")
	if !strings.Contains(routes, far.Spec.PodCIDR+" via "+c.ip["net-b"]) {
		t.Errorf("node net-a's routes have no host-gw route to net-b's pods via %s:\n%s", c.ip["net-b"], routes)
	}
	c.checkPodToPod(t, web)
}

// TestClusterNetwork is issue 5's acceptance on a cluster of two nodes
// with the default vxlan backend: pod to pod without NAT, a ClusterIP
// Service spreading over both nodes, scaling to zero and back, NodePort
// and LoadBalancer from outside, externalTrafficPolicy Local, readiness,
// cluster DNS, an agent restart under an open connection, and no rules
// left for deleted Services or after `orch agent cleanup`.
func TestClusterNetwork(t *testing.T) {
	clusterNetwork(t, startNetCluster(t, network.BackendVXLAN, 81))
}

// TestClusterNetworkNFTables is TestClusterNetwork with the agents'
// --proxy-mode nftables (issue 22): every Service scenario the same, but
// for NodePorts on 127.0.0.1, which nftables mode does not serve, as
// upstream's.
func TestClusterNetworkNFTables(t *testing.T) {
	clusterNetwork(t, startNetClusterMode(t, network.BackendVXLAN, "nftables", 88))
}

func clusterNetwork(t *testing.T, c *netCluster) {
	web := c.startWeb(t)
	if link := c.inNode(t, "net-a", "ip", "-d", "link", "show", "orch.vxlan"); !strings.Contains(link, "vxlan id 1") {
		t.Errorf("node net-a has no VXLAN device orch.vxlan with VNI 1:\n%s", link)
	}
	c.checkPodToPod(t, web)
	// The proxy's REJECT of Services without endpoints must see pod
	// traffic before ORCH-FORWARD accepts it, whichever started first.
	for _, n := range c.nodes {
		if c.proxyMode == "nftables" {
			// Its own table, whose filter chains run whatever iptables
			// accepts, and no KUBE-SERVICES of iptables mode.
			if rules := c.rules(t, n); !strings.Contains(rules, "table ip kube-proxy") || strings.Contains(rules, ":KUBE-SERVICES") {
				t.Errorf("node %s in nftables mode: want the table ip kube-proxy and no iptables KUBE-SERVICES:\n%s", n, rules)
			}
			continue
		}
		forward := c.inNode(t, n, "iptables", "-S", "FORWARD")
		if svc, orch := strings.Index(forward, "-j KUBE-SERVICES"), strings.Index(forward, "-j ORCH-FORWARD"); svc < 0 || orch < svc {
			t.Errorf("node %s: FORWARD must jump to KUBE-SERVICES before ORCH-FORWARD:\n%s", n, forward)
		}
	}
	c.s.Kubectl(t, "expose", "deployment", "web", "--port=80", "--target-port=8080", "--name=web")

	t.Run("clusterIPSpreads", func(t *testing.T) {
		for _, n := range c.nodes {
			eventually(t, 30*time.Second, func() string { // the new Service's name and rules
				if out, ok := c.fetch(t, n, "http://web/cgi-bin/who"); !ok {
					return "from " + n + ": " + out
				}
				return ""
			})
			seen := map[string]int{}
			for _, answer := range c.who(t, n, "http://web", 20) {
				pod, _, _ := strings.Cut(answer, " ")
				seen[pod]++
			}
			if len(seen) != 2 || seen["FAILED"] > 0 {
				t.Errorf("20 requests to http://web from node %s reached %v; want both web pods, no failures", n, seen)
			}
		}
	})
	t.Run("scaleToZeroAndBack", func(t *testing.T) {
		c.s.Kubectl(t, "scale", "deployment", "web", "--replicas=0")
		eventually(t, time.Minute, func() string {
			out, ok := c.fetch(t, "net-a", "http://web/cgi-bin/who")
			if ok || !strings.Contains(out, "refused") {
				return "with no endpoints: " + out
			}
			return ""
		})
		c.s.Kubectl(t, "scale", "deployment", "web", "--replicas=2")
		web = c.webPods(t, 2)
		eventually(t, 30*time.Second, func() string {
			if out, ok := c.fetch(t, "net-b", "http://web/cgi-bin/who"); !ok {
				return "after scaling back: " + out
			}
			return ""
		})
	})
	t.Run("nodePortAndLoadBalancer", func(t *testing.T) { c.checkExternal(t) })
	t.Run("externalTrafficPolicyLocal", func(t *testing.T) {
		c.s.KubectlIn(t, `apiVersion: v1
kind: Service
metadata: {name: web-local}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`, "apply", "-f", "-")
		port := c.nodePort(t, "web-local")
		for _, n := range c.nodes {
			answer := c.httpGet(t, fmt.Sprintf("http://%s:%d/cgi-bin/who", c.ip[n], port))
			if want := web[n].Name + " " + c.hostIP; answer != want {
				t.Errorf("NodePort with externalTrafficPolicy Local on %s answered %q, want %q (the node's own pod, the client's own address)", n, answer, want)
			}
		}
		// A Local LoadBalancer's health check port: each node has a pod.
		c.s.Kubectl(t, "expose", "deployment", "web", "--port=8082", "--target-port=8080", "--name=web-lblocal", "--type=LoadBalancer",
			"--overrides", `{"spec":{"externalTrafficPolicy":"Local"}}`)
		svc, err := c.client.CoreV1().Services("default").Get(context.Background(), "web-lblocal", metav1.GetOptions{})
		if err != nil || svc.Spec.HealthCheckNodePort == 0 {
			t.Fatalf("web-lblocal: healthCheckNodePort %v, %v", svc.Spec.HealthCheckNodePort, err)
		}
		for _, n := range c.nodes {
			if answer := c.httpGet(t, fmt.Sprintf("http://%s:%d/", c.ip[n], svc.Spec.HealthCheckNodePort)); !strings.Contains(answer, `"localEndpoints":1`) {
				t.Errorf("health check node port on %s answered %q; want localEndpoints 1", n, answer)
			}
		}
	})
	t.Run("readiness", func(t *testing.T) {
		c.s.Kubectl(t, "exec", web["net-b"].Name, "--", "rm", "/www/ready")
		waitPod(t, c.client, web["net-b"].Name, time.Minute, func(p *corev1.Pod) string {
			if controller.PodReady(p) {
				return "still ready"
			}
			return ""
		})
		eventually(t, 30*time.Second, func() string {
			for _, answer := range c.who(t, "net-a", "http://web", 10) {
				if !strings.HasPrefix(answer, web["net-a"].Name+" ") {
					return "a request reached " + answer
				}
			}
			return ""
		})
		c.s.Kubectl(t, "exec", web["net-b"].Name, "--", "touch", "/www/ready")
		web = c.webPods(t, 2)
	})
	t.Run("hairpinAndAffinity", func(t *testing.T) {
		// A pod reaches itself through a Service that selects only it.
		self := web["net-a"].Name
		c.s.Kubectl(t, "label", "pod", self, "self=yes")
		c.s.Kubectl(t, "expose", "pod", self, "--name=self", "--port=80", "--target-port=8080", "--selector=self=yes")
		eventually(t, 30*time.Second, func() string {
			r := c.s.Run(t, Cmd{Args: []string{"exec", self, "--", "timeout", "5", "wget", "-qO-", "http://self/cgi-bin/who"}})
			if !strings.HasPrefix(r.Stdout, self+" ") {
				return fmt.Sprintf("%s through its own Service: %q %q", self, r.Stdout, r.Stderr)
			}
			return ""
		})
		// sessionAffinity ClientIP: one client, one pod.
		c.s.KubectlIn(t, `apiVersion: v1
kind: Service
metadata: {name: sticky}
spec:
  selector: {app: web}
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}
  ports: [{port: 80, targetPort: 8080}]
`, "apply", "-f", "-")
		eventually(t, 30*time.Second, func() string {
			if out, ok := c.fetch(t, "net-b", "http://sticky/cgi-bin/who"); !ok {
				return "sticky: " + out
			}
			return ""
		})
		seen := map[string]bool{}
		for _, answer := range c.who(t, "net-b", "http://sticky", 10) {
			pod, _, _ := strings.Cut(answer, " ")
			seen[pod] = true
		}
		if len(seen) != 1 {
			t.Errorf("10 requests to a ClientIP-affinity Service reached %v; want one pod", seen)
		}
	})
	t.Run("dns", func(t *testing.T) { c.checkDNS(t) })
	t.Run("agentRestartKeepsConnections", func(t *testing.T) {
		// A pod on net-a opens a connection through the Service that
		// lasts 15 s; the agent restarts while it is open.
		c.s.KubectlIn(t, busyboxPod("slow", "Never", "mkdir -p /tmp; wget -qO /tmp/slow http://web/cgi-bin/slow & touch /tmp/started; wait; sleep 3600",
			"", "  nodeName: net-a\n  terminationGracePeriodSeconds: 1\n"), "apply", "-f", "-")
		eventually(t, time.Minute, func() string {
			if r := c.s.Run(t, Cmd{Args: []string{"exec", "slow", "--", "cat", "/tmp/started"}}); r.Code != 0 {
				return "the slow request has not started: " + r.Stderr
			}
			return ""
		})
		time.Sleep(time.Second) // connected
		c.agent["net-a"].Stop()
		c.agent["net-a"].Start()
		waitNodeReady(t, c.client, "net-a")
		eventually(t, time.Minute, func() string {
			r := c.s.Run(t, Cmd{Args: []string{"exec", "slow", "--", "cat", "/tmp/slow"}})
			if strings.TrimSpace(r.Stdout) != "done" {
				return fmt.Sprintf("the slow answer across the restart: %q %q", r.Stdout, r.Stderr)
			}
			return ""
		})
	})
	t.Run("deletedServicesLeaveNoRules", func(t *testing.T) {
		c.s.Kubectl(t, "delete", "service", "web", "web-np", "web-lb", "web-local", "web-lblocal", "hl", "ext", "self", "sticky")
		for _, n := range c.nodes {
			eventually(t, 30*time.Second, func() string {
				rules := c.rules(t, n)
				for _, gone := range []string{"default/web", "default/hl", "default/ext", "default/self", "default/sticky"} {
					if strings.Contains(rules, gone) {
						return fmt.Sprintf("node %s still has rules of %s:\n%s", n, gone, rules)
					}
				}
				if !strings.Contains(rules, c.serviceRuleName("default/kubernetes", "https")) {
					return fmt.Sprintf("node %s lost the rules of default/kubernetes:\n%s", n, rules)
				}
				return ""
			})
		}
	})
	t.Run("cleanup", func(t *testing.T) {
		c.agent["net-b"].Stop()
		c.inNode(t, "net-b", orchBin, "agent", "cleanup")
		rules := c.rules(t, "net-b")
		for _, ours := range []string{"KUBE-", "ORCH-", "kube-proxy"} {
			if strings.Contains(rules, ours) {
				t.Errorf("after orch agent cleanup, node net-b still has %s rules:\n%s", ours, rules)
			}
		}
		if links := c.inNode(t, "net-b", "ip", "link"); strings.Contains(links, "orch.vxlan") {
			t.Errorf("after orch agent cleanup, node net-b still has orch.vxlan:\n%s", links)
		}
	})
}

// checkPodToPod: each client pings and fetches from the web pod on the
// other node by pod IP, which sees the client's own pod IP.
func (c *netCluster) checkPodToPod(t *testing.T, web map[string]*corev1.Pod) {
	t.Helper()
	for i, from := range c.nodes {
		to := c.nodes[1-i]
		client, err := c.client.CoreV1().Pods("default").Get(context.Background(), "client-"+from, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		target := web[to].Status.PodIP
		c.s.Kubectl(t, "exec", client.Name, "--", "ping", "-c", "1", "-W", "3", target)
		answer, ok := c.fetch(t, from, "http://"+target+":8080/cgi-bin/who")
		if want := web[to].Name + " " + client.Status.PodIP; !ok || answer != want {
			t.Errorf("from %s (node %s) to %s (node %s): %q, want %q (the sender's pod IP, no NAT)", client.Name, from, target, to, answer, want)
		}
	}
}

// checkExternal: a NodePort and a LoadBalancer Service answer from the
// host on every node's address.
func (c *netCluster) checkExternal(t *testing.T) {
	c.s.Kubectl(t, "expose", "deployment", "web", "--port=80", "--target-port=8080", "--name=web-np", "--type=NodePort")
	c.s.Kubectl(t, "expose", "deployment", "web", "--port=8081", "--target-port=8080", "--name=web-lb", "--type=LoadBalancer")
	port := c.nodePort(t, "web-np")
	for _, n := range c.nodes {
		if answer := c.httpGet(t, fmt.Sprintf("http://%s:%d/cgi-bin/who", c.ip[n], port)); !strings.HasPrefix(answer, "web-") {
			t.Errorf("NodePort on %s answered %q", n, answer)
		}
		// On the node itself, the NodePort answers on 127.0.0.1 too
		// (in iptables mode only, as upstream's).
		if c.proxyMode == "nftables" {
			continue
		}
		if answer := c.inNode(t, n, "timeout", "10", "busybox", "wget", "-qO-", fmt.Sprintf("http://127.0.0.1:%d/cgi-bin/who", port)); !strings.HasPrefix(answer, "web-") {
			t.Errorf("NodePort on 127.0.0.1 of %s answered %q", n, answer)
		}
	}
	var ingress []string
	eventually(t, 30*time.Second, func() string {
		svc, err := c.client.CoreV1().Services("default").Get(context.Background(), "web-lb", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ingress = nil
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ingress = append(ingress, in.IP)
		}
		if strings.Join(ingress, ",") != c.ip["net-a"]+","+c.ip["net-b"] {
			return fmt.Sprintf("load balancer ingress %v, want both nodes' addresses", ingress)
		}
		return ""
	})
	for _, ip := range ingress {
		if answer := c.httpGet(t, "http://"+ip+":8081/cgi-bin/who"); !strings.HasPrefix(answer, "web-") {
			t.Errorf("LoadBalancer ingress %s:8081 answered %q", ip, answer)
		}
	}
}

func (c *netCluster) nodePort(t *testing.T, service string) int32 {
	t.Helper()
	svc, err := c.client.CoreV1().Services("default").Get(context.Background(), service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Ports[0].NodePort
}

// httpGet fetches url from the host (outside every node), retrying for a
// while: the proxies program new Services within a second or so.
func (c *netCluster) httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 3 * time.Second}
	var body string
	eventually(t, 30*time.Second, func() string {
		resp, err := client.Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s: %d %v", url, resp.StatusCode, err)
		}
		body = plainAddresses(strings.TrimSpace(string(data)))
		return ""
	})
	return body
}

// checkDNS asks the cluster DNS from a pod: services by short and full
// name, a headless Service's pod record, SRV, an ExternalName and a name
// only the host's resolver knows.
func (c *netCluster) checkDNS(t *testing.T) {
	c.s.KubectlIn(t, `apiVersion: v1
kind: Service
metadata: {name: hl}
spec:
  clusterIP: None
  selector: {app: named}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: outside.example
`, "apply", "-f", "-")
	c.s.KubectlIn(t, busyboxPod("named", "Always", "sleep 3600", "", "  hostname: named-0\n  subdomain: hl\n  terminationGracePeriodSeconds: 1\n"), "apply", "-f", "-")
	named := waitPod(t, c.client, "named", 2*time.Minute, func(p *corev1.Pod) string {
		if !controller.PodReady(p) {
			return "named not ready"
		}
		return ""
	})
	svc, err := c.client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// busybox's nslookup tries every search domain and exits 1 when one
	// of them has no answer, so answers are told apart by what they say.
	cases := []struct{ query, want string }{
		{"kubernetes.default.svc.cluster.local", "10.43.0.1"},
		{"web", svc.Spec.ClusterIP},
		{"web.default.svc.cluster.local", svc.Spec.ClusterIP},
		{"hl.default.svc.cluster.local", named.Status.PodIP},
		{"named-0.hl.default.svc.cluster.local", named.Status.PodIP},
		{"-type=srv _http._tcp.hl.default.svc.cluster.local", "named-0.hl.default.svc.cluster.local"},
		{"ext.default.svc.cluster.local", "outside.example"},
		{"outside.example", outsideIP},
		{"10.43.0.1", "kubernetes.default.svc.cluster.local"},
	}
	if conf := c.s.Kubectl(t, "exec", "client-net-b", "--", "cat", "/etc/resolv.conf"); !strings.Contains(conf, "search default.svc.cluster.local svc.cluster.local cluster.local") ||
		!strings.Contains(conf, "nameserver 10.43.0.10") || !strings.Contains(conf, "ndots:5") {
		t.Errorf("a ClusterFirst pod's resolv.conf:\n%s", conf)
	}
	for _, tc := range cases {
		eventually(t, 20*time.Second, func() string {
			r := c.s.Run(t, Cmd{Args: append([]string{"exec", "client-net-b", "--", "nslookup"}, strings.Fields(tc.query)...)})
			if !strings.Contains(r.Stdout, tc.want) {
				return fmt.Sprintf("nslookup %s: exit %d, want %q in:\n%s%s", tc.query, r.Code, tc.want, r.Stdout, r.Stderr)
			}
			return ""
		})
	}
	// busybox's nslookup applies the search path to names without dots
	// only; ping resolves through the C library's resolver, which applies
	// it to kubernetes.default too (ndots:5), as any pod's program would.
	eventually(t, 20*time.Second, func() string {
		r := c.s.Run(t, Cmd{Args: []string{"exec", "client-net-b", "--", "ping", "-c", "1", "-W", "1", "kubernetes.default"}})
		if !strings.Contains(r.Stdout, "PING kubernetes.default (10.43.0.1)") {
			return fmt.Sprintf("ping kubernetes.default did not resolve it to 10.43.0.1:\n%s%s", r.Stdout, r.Stderr)
		}
		return ""
	})
	metrics := c.s.Kubectl(t, "exec", "client-net-b", "--", "wget", "-qO-", "http://kube-dns.kube-system.svc.cluster.local:9153/metrics")
	if !strings.Contains(metrics, "orch_dns_requests_total") {
		t.Errorf("the cluster DNS's metrics through kube-dns:9153 lack orch_dns_requests_total:\n%s", metrics)
	}
	r := c.s.Run(t, Cmd{Args: []string{"exec", "client-net-b", "--", "nslookup", "nothere.default.svc.cluster.local"}})
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "NXDOMAIN") {
		t.Errorf("nslookup of a name that does not exist: exit %d\n%s%s; want NXDOMAIN", r.Code, r.Stdout, r.Stderr)
	}
}
