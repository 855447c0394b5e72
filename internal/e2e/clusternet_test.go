package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller"
	"orch/internal/kubelet/images"
)

// netCluster is a server on the host and two agents, each in a network
// namespace of its own joined to one bridge on the host: three machines
// on one link.
type netCluster struct {
	s      *Server
	client kubernetes.Interface
	hostIP string            // the host's address on the bridge
	nodes  []string          // node names
	ip     map[string]string // node name → its address
	netns  map[string]string // node name → its network namespace
	agent  map[string]*Agent
	// proxyMode is the agents' --proxy-mode: "iptables" or "nftables".
	proxyMode string
}

// outsideName is a name only the test's resolver on the host knows: the
// cluster DNS must forward it there.
const outsideName, outsideIP = "outside.example.", "192.0.2.99"

// startNetCluster starts the cluster with the agents' --network-backend
// backend, in iptables proxy mode. The agents' resolv.conf names the host,
// where a resolver of the test's answers outsideName.
func startNetCluster(t *testing.T, backend string, subnet int) *netCluster {
	t.Helper()
	return startNetClusterMode(t, backend, "iptables", subnet)
}

// startNetClusterMode is startNetCluster with the agents' --proxy-mode.
func startNetClusterMode(t *testing.T, backend, proxyMode string, subnet int) *netCluster {
	t.Helper()
	return startNetClusterWith(t, netClusterOptions{backend: backend, proxyMode: proxyMode, subnet: subnet})
}

// netClusterOptions are a test cluster's: the agents' --network-backend
// and --proxy-mode, the host bridge's subnet (10.199.<subnet>.0/24), and
// more flags for the server.
type netClusterOptions struct {
	backend, proxyMode string
	subnet             int
	serverArgs         []string
}

// startNetClusterWith starts a server and two agents, each in a network
// namespace of its own on a bridge of the host.
func startNetClusterWith(t *testing.T, o netClusterOptions) *netCluster {
	t.Helper()
	requireRuntime(t)
	backend, proxyMode, subnet := o.backend, o.proxyMode, o.subnet
	c := &netCluster{hostIP: fmt.Sprintf("10.199.%d.1", subnet), ip: map[string]string{}, netns: map[string]string{}, agent: map[string]*Agent{},
		proxyMode: proxyMode}
	bridge := makeBridge(t, "oebr", c.hostIP)
	startTestResolver(t, c.hostIP)
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver "+c.hostIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	c.s = StartServerAt(t, c.hostIP, o.serverArgs...)
	c.client = c.s.client(t)
	server := fmt.Sprintf("https://%s:%d", c.hostIP, c.s.Port)
	for i, suffix := range []string{"a", "b"} {
		name := "net-" + suffix
		ns := fmt.Sprintf("orch-e2e-%d-%s", os.Getpid(), suffix)
		link := fmt.Sprintf("oe%s%d", suffix, os.Getpid()%100000)
		c.nodes = append(c.nodes, name)
		c.ip[name], c.netns[name] = fmt.Sprintf("10.199.%d.%d", subnet, 11+i), ns
		attachNetns(t, ns, link, bridge, c.ip[name], c.hostIP)
		c.agent[name] = StartAgentIn(t, ns, server, c.s.Token(), name, c.ip[name], "--network-backend", backend, "--resolv-conf", resolvConf,
			"--proxy-mode", proxyMode)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range c.nodes {
			for _, args := range [][]string{{"iptables-save"}, {"ip6tables-save"}, {"nft", "list", "ruleset"}, {"ip", "route"}, {"ip", "-6", "route"}, {"ip", "-6", "neigh"}, {"conntrack", "-L"}} {
				out, err := exec.Command("nsenter", append([]string{"--net=/run/netns/" + c.netns[n]}, args...)...).CombinedOutput()
				t.Logf("node %s: %s: %v\n%s", n, strings.Join(args, " "), err, truncateHead(string(out), 20000))
			}
		}
	})
	for _, n := range c.nodes {
		waitNodeReady(t, c.client, n)
	}
	return c
}

// makeBridge makes a bridge named prefix and the test's PID, with the
// host at hostIP/24 on it; it goes when t ends.
func makeBridge(t testing.TB, prefix, hostIP string) string {
	t.Helper()
	bridge := fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	mustRun(t, "ip", "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { exec.Command("ip", "link", "del", bridge).Run() })
	mustRun(t, "ip", "addr", "add", hostIP+"/24", "dev", bridge)
	mustRun(t, "ip", "link", "set", bridge, "up")
	return bridge
}

// attachNetns makes network namespace netns with eth0 at ip/24 on the
// host's bridge (a veth pair, hostLink on the bridge), with a default
// route via gateway; both go when t ends.
func attachNetns(t testing.TB, netns, hostLink, bridge, ip, gateway string) {
	t.Helper()
	makeNodeNetns(t, netns, hostLink, ip, gateway)
	mustRun(t, "ip", "link", "set", hostLink, "master", bridge, "up")
}

func mustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startTestResolver answers outsideName with outsideIP, over UDP and TCP
// on ip:53, and refuses everything else.
func startTestResolver(t *testing.T, ip string) {
	t.Helper()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if len(q.Question) == 1 && strings.EqualFold(q.Question[0].Name, outsideName) {
			if q.Question[0].Qtype == dns.TypeA {
				rr, _ := dns.NewRR(outsideName + " 60 IN A " + outsideIP)
				m.Answer = append(m.Answer, rr)
			}
		} else {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	for _, proto := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: net.JoinHostPort(ip, "53"), Net: proto, Handler: handler}
		started := make(chan error, 1)
		srv.NotifyStartedFunc = func() { started <- nil }
		go func() { started <- srv.ListenAndServe() }()
		if err := <-started; err != nil {
			t.Fatalf("the test's resolver on %s/%s: %v", ip, proto, err)
		}
		t.Cleanup(func() { srv.Shutdown() })
	}
}

// inNode runs a command in node's network namespace.
func (c *netCluster) inNode(t *testing.T, node string, args ...string) string {
	t.Helper()
	return mustRun(t, append(inNetns(c.netns[node]), args...)...)
}

// ipsets are the ipsets of node's network namespace: name → addresses.
func (c *netCluster) ipsets(t *testing.T, node string) map[string][]string {
	t.Helper()
	ns, err := netns.GetFromPath("/run/netns/" + c.netns[node])
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	all, err := h.IpsetListAll()
	if err != nil {
		t.Fatalf("node %s: list ipsets: %v", node, err)
	}
	out := map[string][]string{}
	for _, s := range all { // a big set comes in more than one message
		for _, e := range s.Entries {
			out[s.SetName] = append(out[s.SetName], e.IP.String())
		}
		if _, ok := out[s.SetName]; !ok {
			out[s.SetName] = nil
		}
	}
	return out
}

// webScript serves /cgi-bin/who (the pod's name and the client's
// address), /cgi-bin/slow (an answer after 15 s) and /ready (while the
// file exists: the readiness probe) on port 8080.
const webScript = `mkdir -p /www/cgi-bin
printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho "$(hostname) $REMOTE_ADDR"\n' > /www/cgi-bin/who
printf '#!/bin/sh\necho Content-Type: text/plain\necho\nsleep 15\necho done\n' > /www/cgi-bin/slow
chmod +x /www/cgi-bin/who /www/cgi-bin/slow
touch /www/ready
exec httpd -f -p 8080 -h /www`

// startWeb runs a Deployment "web" of two busybox httpd pods, one per
// node, and a client pod pinned on each node ("client-<node>"), and
// returns the web pods by node.
func (c *netCluster) startWeb(t *testing.T) map[string]*corev1.Pod {
	t.Helper()
	c.s.KubectlIn(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
      containers:
      - name: web
        image: %s
        imagePullPolicy: Never
        command: [sh, -c, %q]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 1, failureThreshold: 1}
`, images.BusyboxRef, webScript), "apply", "-f", "-")
	for _, n := range c.nodes {
		c.s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: client-%s}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sleep, "3600"]}
`, n, n, images.BusyboxRef), "apply", "-f", "-")
	}
	for _, n := range c.nodes {
		waitPod(t, c.client, "client-"+n, 2*time.Minute, func(p *corev1.Pod) string {
			if p.Status.Phase != corev1.PodRunning {
				return "client phase " + string(p.Status.Phase)
			}
			return ""
		})
	}
	return c.webPods(t, 2)
}

// webPods waits for n ready web pods and returns them by node.
func (c *netCluster) webPods(t *testing.T, n int) map[string]*corev1.Pod {
	t.Helper()
	var byNode map[string]*corev1.Pod
	eventually(t, 2*time.Minute, func() string {
		list, err := c.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err.Error()
		}
		byNode = map[string]*corev1.Pod{}
		for i, p := range list.Items {
			if p.DeletionTimestamp == nil && controller.PodReady(&p) {
				byNode[p.Spec.NodeName] = &list.Items[i]
			}
		}
		if len(byNode) != n {
			return fmt.Sprintf("%d ready web pods on distinct nodes, want %d", len(byNode), n)
		}
		return ""
	})
	return byNode
}

// fetch runs wget in node's client pod; it returns the output and
// whether wget succeeded.
func (c *netCluster) fetch(t *testing.T, node, url string) (string, bool) {
	t.Helper()
	r := c.s.Run(t, Cmd{Args: []string{"exec", "client-" + node, "--", "timeout", "5", "wget", "-qO-", url}})
	return plainAddresses(strings.TrimSpace(r.Stdout + r.Stderr)), r.Code == 0
}

// plainAddresses writes busybox httpd's IPv4-mapped client addresses
// ("[::ffff:10.42.0.3]") as plain IPv4 ones.
func plainAddresses(s string) string {
	return strings.NewReplacer("[::ffff:", "", "]", "").Replace(s)
}

// who asks url's /cgi-bin/who count times from node's client pod, in one
// exec, and returns the answers ("<pod> <client address>").
func (c *netCluster) who(t *testing.T, node, url string, count int) []string {
	t.Helper()
	script := fmt.Sprintf("for i in $(seq %d); do timeout 5 wget -qO- %s/cgi-bin/who || echo FAILED; done", count, url)
	out := c.s.Kubectl(t, "exec", "client-"+node, "--", "sh", "-c", script)
	return strings.Split(plainAddresses(strings.TrimSpace(out)), "\n")
}

// rules is node's Service rules as text: iptables-save, and in nftables
// mode the kube-proxy table too.
func (c *netCluster) rules(t *testing.T, node string) string {
	t.Helper()
	out := c.inNode(t, node, "iptables-save")
	if c.proxyMode == "nftables" {
		r, _ := exec.Command("nsenter", "--net=/run/netns/"+c.netns[node], "nft", "list", "ruleset").CombinedOutput()
		out += string(r)
	}
	return out
}

// serviceRuleName is how a Service port shows in the rules: "ns/name:port"
// in iptables mode's comments, "ns/name/tcp/port" in nftables chain names.
func (c *netCluster) serviceRuleName(svc, port string) string {
	if c.proxyMode == "nftables" {
		return svc + "/tcp/" + port
	}
	if port == "" {
		return svc
	}
	return svc + ":" + port
}
