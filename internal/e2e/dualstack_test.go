package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/images"
	"orch/internal/network"
)

// TestDualStack is issue 22's fifth acceptance on two nodes of a
// dual-stack cluster: every node gets an IPv4 and an IPv6 pod network,
// every pod an address of each; a pod reaches another pod over IPv6 on its
// node and across nodes (VXLAN over the nodes' IPv4 addresses), and a
// dual-stack Service over its IPv6 cluster IP; the cluster DNS answers
// the Service's AAAA record; a NetworkPolicy isolates a pod in both
// families. A Service that asks for nothing stays single-stack IPv4, as
// upstream.
func TestDualStack(t *testing.T) {
	c := startNetClusterWith(t, netClusterOptions{backend: network.BackendVXLAN, proxyMode: "iptables", subnet: 90,
		serverArgs: []string{"--cluster-cidr", "10.42.0.0/16,fd00:42::/56", "--service-cidr", "10.43.0.0/16,fd00:43::/112"}})
	for _, n := range c.nodes {
		got := c.s.Kubectl(t, "get", "node", n, "-o", "jsonpath={.spec.podCIDRs}")
		if !strings.Contains(got, "10.42.") || !strings.Contains(got, "fd00:42:") {
			t.Fatalf("node %s has podCIDRs %s, want an IPv4 and an IPv6 one", n, got)
		}
	}

	var objs strings.Builder
	pod := func(name, node, app, script string) {
		fmt.Fprintf(&objs, `---
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sh, -c, %q]}
`, name, app, node, images.BusyboxRef, script)
	}
	for _, n := range c.nodes {
		pod("web-"+n, n, "web", "mkdir -p /www && echo $(hostname) > /www/who && exec httpd -f -p 8080 -h /www")
	}
	a, b := c.nodes[0], c.nodes[1]
	pod("client", a, "client", "exec sleep 1000000000")
	fmt.Fprintf(&objs, `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ipFamilyPolicy: RequireDualStack
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web4}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`)
	c.s.KubectlIn(t, objs.String(), "apply", "-f", "-")

	ipv6 := map[string]string{} // pod → its IPv6 address
	for _, name := range []string{"web-" + a, "web-" + b, "client"} {
		p := waitPodIn(t, c, "default", name)
		var ips []string
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
			if parsed := net.ParseIP(ip.IP); parsed != nil && parsed.To4() == nil {
				ipv6[name] = ip.IP
			}
		}
		if len(ips) != 2 || net.ParseIP(p.Status.PodIP).To4() == nil || ipv6[name] == "" {
			t.Fatalf("pod %s has podIP %s and podIPs %v; want an IPv4 one first and an IPv6 one", name, p.Status.PodIP, ips)
		}
	}

	// wget asks from the client pod, on node a, and says who answered.
	wget := func(host string) string {
		r := c.s.Run(t, Cmd{Args: []string{"exec", "client", "--", "timeout", "3", "wget", "-q", "-O-", "http://" + net.JoinHostPort(host, "8080") + "/who"}})
		if r.Code != 0 {
			return fmt.Sprintf("(exit %d: %s)", r.Code, strings.TrimSpace(r.Stderr))
		}
		return strings.TrimSpace(r.Stdout)
	}
	for _, n := range []string{a, b} {
		t.Run("pod to pod over IPv6 to "+n, func(t *testing.T) {
			eventually(t, 30*time.Second, func() string {
				if got := wget(ipv6["web-"+n]); got != "web-"+n {
					return fmt.Sprintf("client on %s → [%s]:8080 answered %q, want web-%s", a, ipv6["web-"+n], got, n)
				}
				return ""
			})
		})
	}

	svc := func(name string) *corev1.Service {
		s, err := c.client.CoreV1().Services("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("a dual-stack Service over its IPv6 cluster IP", func(t *testing.T) {
		s := svc("web")
		if len(s.Spec.ClusterIPs) != 2 || len(s.Spec.IPFamilies) != 2 || s.Spec.IPFamilies[1] != corev1.IPv6Protocol {
			t.Fatalf("Service web: clusterIPs %v, ipFamilies %v; want an IPv4 and an IPv6 one", s.Spec.ClusterIPs, s.Spec.IPFamilies)
		}
		v6 := s.Spec.ClusterIPs[1]
		seen := map[string]bool{}
		eventually(t, 30*time.Second, func() string {
			r := c.s.Run(t, Cmd{Args: []string{"exec", "client", "--", "timeout", "3", "wget", "-q", "-O-", "http://" + net.JoinHostPort(v6, "80") + "/who"}})
			if r.Code != 0 {
				return fmt.Sprintf("wget [%s]:80: exit %d: %s", v6, r.Code, r.Stderr)
			}
			seen[strings.TrimSpace(r.Stdout)] = true
			if !seen["web-"+a] || !seen["web-"+b] {
				return fmt.Sprintf("answers from %v so far, want both web pods", seen)
			}
			return ""
		})
		t.Run("AAAA", func(t *testing.T) {
			eventually(t, 30*time.Second, func() string {
				r := c.s.Run(t, Cmd{Args: []string{"exec", "client", "--", "nslookup", "-type=AAAA", "web.default.svc.cluster.local"}})
				if r.Code != 0 || !strings.Contains(r.Stdout, v6) {
					return fmt.Sprintf("nslookup -type=AAAA web: exit %d, %q; want %s", r.Code, r.Stdout+r.Stderr, v6)
				}
				return ""
			})
		})
	})
	t.Run("a NetworkPolicy isolates in both families", func(t *testing.T) {
		v4 := waitPodIn(t, c, "default", "web-"+b).Status.PodIP
		c.s.KubectlIn(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-web}
spec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress]}
`, "apply", "-f", "-")
		eventually(t, 30*time.Second, func() string {
			if got := wget(ipv6["web-"+b]); got == "web-"+b {
				return "web-" + b + " still answers over IPv6 under a default deny"
			}
			if got := wget(v4); got == "web-"+b {
				return "web-" + b + " still answers over IPv4 under a default deny"
			}
			return ""
		})
		c.s.Kubectl(t, "delete", "networkpolicy", "deny-web")
		eventually(t, 30*time.Second, func() string {
			if got := wget(ipv6["web-"+b]); got != "web-"+b {
				return fmt.Sprintf("after the policy's deletion, [%s]:8080 answered %q", ipv6["web-"+b], got)
			}
			return ""
		})
	})
	t.Run("a Service that asks for nothing is IPv4 only", func(t *testing.T) {
		s := svc("web4")
		if len(s.Spec.ClusterIPs) != 1 || net.ParseIP(s.Spec.ClusterIP).To4() == nil || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			t.Fatalf("Service web4: clusterIPs %v, policy %v; want one IPv4 address, SingleStack", s.Spec.ClusterIPs, *s.Spec.IPFamilyPolicy)
		}
	})
}
