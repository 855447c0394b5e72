package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch/internal/kubelet/images"
)

// haCluster is three servers (--cluster-init and two that join it) and
// one agent, each in a network namespace of its own on one bridge.
type haCluster struct {
	servers []*Server
	ips     []string
	agent   *Agent
	token   string
}

// startHACluster starts the servers, each with the flags serverArgs,
// and, withAgent, the agent (ha-agent).
func startHACluster(t testing.TB, subnet int, withAgent bool, serverArgs ...string) *haCluster {
	t.Helper()
	hostIP := fmt.Sprintf("10.199.%d.1", subnet)
	bridge := makeBridge(t, "ohbr", hostIP)

	c := &haCluster{}
	for i := range 3 {
		ip := fmt.Sprintf("10.199.%d.%d", subnet, 21+i)
		ns := fmt.Sprintf("orch-ha-%d-%d", os.Getpid(), i)
		attachNetns(t, ns, fmt.Sprintf("oh%d%d", i, os.Getpid()%100000), bridge, ip, hostIP)
		extra := append([]string{"--node-ip", ip, "--node-name", fmt.Sprintf("ha-%d", i)}, serverArgs...)
		if i == 0 {
			extra = append(extra, "--cluster-init")
		} else {
			extra = append(extra, "--server", c.servers[0].URL(), "--token", c.token)
		}
		s := newServerIn(t, ns, ip, false, extra...)
		if i > 0 {
			s.Port = c.servers[0].Port // servers of a cluster share the apiserver's port
		}
		s.Start()
		if i == 0 {
			c.token = s.Token()
		}
		c.servers, c.ips = append(c.servers, s), append(c.ips, ip)
	}
	if !withAgent {
		return c
	}
	agentIP := fmt.Sprintf("10.199.%d.31", subnet)
	agentNS := fmt.Sprintf("orch-ha-%d-agent", os.Getpid())
	attachNetns(t, agentNS, fmt.Sprintf("oha%d", os.Getpid()%100000), bridge, agentIP, hostIP)
	c.agent = StartAgentIn(t, agentNS, c.servers[0].URL(), c.token, "ha-agent", agentIP)
	return c
}

// newServerIn is a server in network namespace netns at ip, withAgent
// its own (node e2e-server, with the busybox test image); it is stopped
// when t ends. Start it with Start.
func newServerIn(t testing.TB, netns, ip string, withAgent bool, extra ...string) *Server {
	dir := t.TempDir()
	s := &Server{t: t, Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig.yaml"), bindAddress: "0.0.0.0",
		extraArgs: extra, host: ip, wrap: inNetns(netns), WithAgent: withAgent}
	s.pickPorts()
	if withAgent {
		writeBusyboxImage(t, dir)
	}
	s.stopWhenDone(withAgent)
	return s
}

// etcdClient talks to the servers' etcd members with the first server's
// etcd client certificate.
func (c *haCluster) etcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	dir := filepath.Join(c.servers[0].Dir, "server", "tls", "etcd")
	tlsConfig, err := transport.TLSInfo{CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key"),
		TrustedCAFile: filepath.Join(dir, "ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	var endpoints []string
	for i, s := range c.servers {
		endpoints = append(endpoints, fmt.Sprintf("https://%s:%d", c.ips[i], s.etcdPorts[0]))
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// members says how many voting members and learners etcd has.
func members(client *clientv3.Client) (voters, learners int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := client.MemberList(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range list.Members {
		if m.IsLearner {
			learners++
		} else {
			voters++
		}
	}
	return voters, learners, nil
}

// quickClient is a client of s whose requests give up after timeout.
func quickClient(t testing.TB, s *Server, timeout time.Duration) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = timeout
	rc.QPS, rc.Burst = -1, 0
	return kubernetes.NewForConfigOrDie(rc)
}

// clientsBut are quick clients of every server but victim.
func (c *haCluster) clientsBut(t testing.TB, victim int, timeout time.Duration) []kubernetes.Interface {
	var clients []kubernetes.Interface
	for i, s := range c.servers {
		if i != victim {
			clients = append(clients, quickClient(t, s, timeout))
		}
	}
	return clients
}

// firstWrite creates ConfigMaps through clients in turn until one is
// acknowledged; it returns when, after since.
func firstWrite(t testing.TB, clients []kubernetes.Interface, since time.Time, name string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, attempt)}}
		_, err := clients[attempt%len(clients)].CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
		if err == nil {
			return time.Since(since)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no write acknowledged within 2 minutes of the kill: %v", last)
	return 0
}

func TestHAServers(t *testing.T) {
	// Secrets are encrypted at rest, so that the last subtest can rotate
	// the keys across servers.
	c := startHACluster(t, 83, true, "--secrets-encryption")
	etcd := c.etcdClient(t)
	waitVoters(t, etcd, 3)
	admin := c.servers[1].client(t)
	waitNodeReady(t, admin, "ha-agent")
	eventually(t, time.Minute, func() string {
		ep, err := admin.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 3 {
			return fmt.Sprintf("default/kubernetes endpoints: %v %v; want the 3 servers", ep, err)
		}
		data, _ := os.ReadFile(filepath.Join(c.agent.DataDir, "agent", "servers"))
		if strings.Count(string(data), "\n") != 3 {
			return fmt.Sprintf("the agent knows servers %q; want 3", data)
		}
		return ""
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "steady"}, Spec: corev1.PodSpec{NodeName: "ha-agent",
		Containers: []corev1.Container{{Name: "c", Image: images.BusyboxRef, Command: []string{"sleep", "3600"}}}}}
	if _, err := admin.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPodRunningOn(t, admin, "steady")

	for victim := range c.servers {
		t.Run(fmt.Sprintf("kill-%d", victim), func(t *testing.T) {
			survivors := c.clientsBut(t, victim, 2*time.Second)
			killed := time.Now()
			c.servers[victim].Kill()
			t.Cleanup(func() {
				if c.servers[victim].cmd == nil { // the subtest failed before the restart
					c.servers[victim].Start()
				}
			})
			t.Logf("API writable again %v after kill -9 of server %d", firstWrite(t, survivors, killed, fmt.Sprintf("after-kill-%d", victim)).Round(time.Millisecond), victim)
			client := c.servers[(victim+1)%3].client(t)
			eventually(t, time.Minute, func() string {
				lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "ha-agent", metav1.GetOptions{})
				if err != nil || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(killed.Add(time.Second)) {
					return fmt.Sprintf("the agent's node lease was not renewed since the kill: %v %v", lease, err)
				}
				return ""
			})
			samePod(t, client, running)
			c.servers[victim].Start()
			firstWrite(t, []kubernetes.Interface{quickClient(t, c.servers[victim], 2*time.Second)}, time.Now(), fmt.Sprintf("via-restarted-%d", victim))
			waitVoters(t, etcd, 3)
		})
	}

	t.Run("deletedNodeRemovesMember", func(t *testing.T) {
		c.servers[2].Kill()
		client := c.servers[0].client(t)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ha-2"}}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // let every server's informer see it before it goes
		if err := client.CoreV1().Nodes().Delete(context.Background(), "ha-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVoters(t, etcd, 2) // ha-2's member went with its Node
		firstWrite(t, []kubernetes.Interface{quickClient(t, c.servers[0], 2*time.Second), quickClient(t, c.servers[1], 2*time.Second)}, time.Now(), "after-removal")
	})

	// The two servers left follow a key rotation started on one of them:
	// each step waits for both, and after it (the old key dropped) both
	// read the Secret written before it.
	t.Run("secretsEncryption", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		const plaintext = "ha-secret-in-plain-text"
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ha-s"}, StringData: map[string]string{"password": plaintext}}
		if _, err := c.servers[1].client(t).CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		encrypt := func(args ...string) string {
			t.Helper()
			args = append([]string{"secrets-encrypt"}, append(args, "--data-dir", c.servers[0].Dir,
				"--etcd-endpoint", fmt.Sprintf("https://%s:%d", c.ips[0], c.servers[0].etcdPorts[0]))...)
			out, err := exec.CommandContext(ctx, orchBin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("orch %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		// Servers are listed by node name and a suffix of their own; the
		// killed ha-2's hash goes with its lease (30 s), and each step
		// waits for that.
		uses := regexp.MustCompile(`(?m)^ha-[01]-\S+\s+true$`)
		eventually(t, time.Minute, func() string {
			if out := encrypt("status"); !strings.Contains(out, "All hashes match") || len(uses.FindAllString(out, -1)) != 2 {
				return out
			}
			return ""
		})
		before := regexp.MustCompile(`aescbckey-\S+`).FindString(encrypt("status"))
		if out := encrypt("rotate-keys"); strings.Count(out, ": done;") != 3 {
			t.Fatalf("rotate-keys said:\n%s", out)
		}
		status := encrypt("status")
		after := regexp.MustCompile(`aescbckey-\S+`).FindString(status)
		if after == "" || after == before || strings.Contains(status, before) {
			t.Errorf("after rotate-keys from %s:\n%s", before, status)
		}
		raw, err := etcd.Get(ctx, "/registry/secrets/default/ha-s")
		if err != nil || len(raw.Kvs) != 1 || !bytes.HasPrefix(raw.Kvs[0].Value, []byte("k8s:enc:aescbc:v1:"+after+":")) {
			t.Errorf("the Secret in etcd after the rotation: %v %v, want ciphertext of %s", raw, err, after)
		}
		for i := range 2 {
			got, err := c.servers[i].client(t).CoreV1().Secrets("default").Get(ctx, "ha-s", metav1.GetOptions{})
			if err != nil || string(got.Data["password"]) != plaintext {
				t.Errorf("server %d reads the Secret as %v, %v", i, got, err)
			}
		}
	})

	t.Run("settingsMismatchRefused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, orchBin, "server", "--data-dir", t.TempDir(), "--disable-agent", "--https-listen-port", fmt.Sprint(c.servers[0].Port),
			"--server", c.servers[0].URL(), "--token", c.token, "--cluster-cidr", "10.50.0.0/16", "--write-kubeconfig", filepath.Join(t.TempDir(), "k")).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--cluster-cidr 10.50.0.0/16 differs from the cluster's 10.42.0.0/16") {
			t.Fatalf("a server with another --cluster-cidr joined or failed otherwise: %v\n%s", err, out)
		}
	})
}

// waitPodRunningOn waits for pod name to run and returns it.
func waitPodRunningOn(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 2*time.Minute, func() string {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
			return fmt.Sprintf("pod %s not running: %v", name, err)
		}
		pod = p
		return ""
	})
	return pod
}

// samePod checks the pod still runs its first container, never restarted.
func samePod(t *testing.T, client kubernetes.Interface, was *corev1.Pod) {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(context.Background(), was.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now, before := p.Status.ContainerStatuses[0], was.Status.ContainerStatuses[0]
	if p.UID != was.UID || p.Status.Phase != corev1.PodRunning || now.ContainerID != before.ContainerID || now.RestartCount != 0 {
		t.Fatalf("pod %s changed: uid %s→%s phase %s container %s→%s restarts %d", was.Name, was.UID, p.UID, p.Status.Phase, before.ContainerID, now.ContainerID, now.RestartCount)
	}
}
