package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/ingress"
	"orch/internal/network"
)

const wsechoRef = "orch.test/wsecho:1"

// TestIngress is issue 22's third acceptance on two nodes (and, on the same
// cluster, started with --gateway-api, Gateway API's Gateways and
// HTTPRoutes: testGatewayAPI): an Ingress made
// with `kubectl create ingress` answers on every node's HTTPS port with the
// certificate of its Secret, from the pods on both nodes; a path rule and a
// default backend route as written; a WebSocket echo works through it; a
// new certificate in the Secret is served without a restart; the
// Ingress's status lists the nodes and the nodes' metrics count the
// requests.
func TestIngress(t *testing.T) {
	built := make(chan testProgram, 1)
	binDir := t.TempDir()
	go func() { built <- buildTestProgram(binDir, "wsecho") }()
	c := startNetClusterWith(t, netClusterOptions{backend: network.BackendVXLAN, proxyMode: "iptables", subnet: 87, serverArgs: []string{"--gateway-api"}})
	p := <-built
	for _, n := range c.nodes {
		if err := writeProgramImage(p, wsechoRef, filepath.Join(c.agent[n].DataDir, "agent", "images", "wsecho.tar")); err != nil {
			t.Fatal(err)
		}
	}
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
      - {name: web, image: %[1]s, imagePullPolicy: Never, ports: [{containerPort: 8080}],
         readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: other}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: other, image: %[1]s, imagePullPolicy: Never, readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: other}
spec: {selector: {app: other}, ports: [{port: 80, targetPort: 8080}]}
`, wsechoRef), "apply", "-f", "-")
	web := c.webPods(t, 2)
	var webNames []string
	for _, p := range web {
		webNames = append(webNames, p.Name)
	}
	slices.Sort(webNames)

	dir := t.TempDir()
	certV1 := writeCert(t, dir, "v1", "web.example")
	c.s.Kubectl(t, "create", "secret", "tls", "web-tls", "--cert", filepath.Join(dir, "v1.crt"), "--key", filepath.Join(dir, "v1.key"))
	c.s.Kubectl(t, "create", "ingress", "web", "--rule=web.example/*=web:80,tls=web-tls")
	c.s.Kubectl(t, "create", "ingress", "paths", "--rule=paths.example/exact=other:80", "--default-backend=web:80")
	if class := c.s.Kubectl(t, "get", "ingress", "web", "-o", "jsonpath={.spec.ingressClassName}"); class != "orch" {
		t.Errorf("ingress web has class %q, want the default class orch", class)
	}

	client, get := c.frontDoor, fetch
	t.Run("https from both nodes' pods with the Secret's certificate", func(t *testing.T) {
		for _, n := range c.nodes {
			cl := client(n, pool(certV1))
			eventually(t, 30*time.Second, func() string {
				if _, _, err := get(cl, "https://web.example/"); err != nil {
					return "through " + n + ": " + err.Error()
				}
				return ""
			})
			seen := map[string]bool{}
			for range 10 {
				body, resp, err := get(cl, "https://web.example/hello")
				if err != nil {
					t.Fatalf("through %s: %v", n, err)
				}
				f := strings.Fields(body)
				if resp.StatusCode != 200 || len(f) != 3 || f[1] != "web.example" || f[2] != "/hello" {
					t.Fatalf("through %s: %d %q, want a web pod's name, web.example and /hello", n, resp.StatusCode, body)
				}
				if resp.Proto != "HTTP/2.0" {
					t.Errorf("through %s: %s, want HTTP/2.0", n, resp.Proto)
				}
				seen[f[0]] = true
			}
			if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, webNames) {
				t.Errorf("through %s: answers from %v, want both web pods %v", n, got, webNames)
			}
		}
	})
	t.Run("curl --resolve", func(t *testing.T) {
		// As a user would try it, with the Secret's certificate the only
		// one trusted.
		for _, n := range c.nodes {
			out := mustRun(t, "curl", "-sS", "--max-time", "5", "--resolve", "web.example:443:"+c.ip[n],
				"--cacert", filepath.Join(dir, "v1.crt"), "https://web.example/from-curl")
			if f := strings.Fields(out); len(f) != 3 || !slices.Contains(webNames, f[0]) || f[2] != "/from-curl" {
				t.Errorf("curl through %s: %q, want a web pod's answer", n, out)
			}
		}
	})
	t.Run("a path rule and the default backend", func(t *testing.T) {
		cl := client(c.nodes[1], nil)
		for _, tc := range []struct{ url, want string }{
			{"http://paths.example/exact", "other"},
			{"http://paths.example/exact/more", "web"}, // Exact is not Prefix: the default backend
			{"http://unknown.example/", "web"},
		} {
			body, resp, err := get(cl, tc.url)
			if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(body, tc.want) {
				t.Errorf("%s: %v %q; want an answer of %s", tc.url, err, body, tc.want)
			}
		}
	})
	t.Run("websocket", func(t *testing.T) {
		d := websocket.Dialer{
			NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(c.ip[c.nodes[0]], "443"))
			},
			TLSClientConfig: &tls.Config{RootCAs: pool(certV1)},
		}
		ws, _, err := d.Dial("wss://web.example/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		for _, msg := range []string{"one", "two"} {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, got, err := ws.ReadMessage()
			if err != nil || !strings.HasSuffix(string(got), ": "+msg) || !slices.Contains(webNames, strings.TrimSuffix(string(got), ": "+msg)) {
				t.Errorf("echo of %q: %q, %v", msg, got, err)
			}
		}
	})
	t.Run("a new certificate in the Secret is served", func(t *testing.T) {
		certV2 := writeCert(t, dir, "v2", "web.example")
		yaml := c.s.Kubectl(t, "create", "secret", "tls", "web-tls", "--cert", filepath.Join(dir, "v2.crt"), "--key", filepath.Join(dir, "v2.key"),
			"--dry-run=client", "-o", "yaml")
		c.s.KubectlIn(t, yaml, "apply", "-f", "-")
		for _, n := range c.nodes {
			cl := client(n, pool(certV2))
			eventually(t, 30*time.Second, func() string {
				if _, _, err := get(cl, "https://web.example/"); err != nil {
					return "through " + n + " with only the new certificate trusted: " + err.Error()
				}
				return ""
			})
		}
	})
	t.Run("status and metrics", func(t *testing.T) {
		want := []string{c.ip[c.nodes[0]], c.ip[c.nodes[1]]}
		slices.Sort(want)
		eventually(t, 30*time.Second, func() string {
			ing, err := c.client.NetworkingV1().Ingresses("default").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			var got []string
			for _, a := range ing.Status.LoadBalancer.Ingress {
				got = append(got, a.IP)
			}
			if !slices.Equal(got, want) {
				return fmt.Sprintf("status.loadBalancer.ingress %v, want %v", got, want)
			}
			return ""
		})
		metrics := c.s.Kubectl(t, "get", "--raw", "/api/v1/nodes/"+c.nodes[0]+"/proxy/metrics")
		if !strings.Contains(metrics, `orch_ingress_requests_total{code="200",httproute="",ingress="default/web",service="default/web:80"}`) {
			t.Errorf("node %s's metrics have no count of the Ingress's requests:\n%s", c.nodes[0], grepLines(metrics, "orch_ingress"))
		}
	})
	t.Run("gateway api", func(t *testing.T) { testGatewayAPI(t, c, webNames) })
}

// frontDoor is a client that reaches node's front-door ports whatever
// the host name, as curl --resolve does, trusting only roots.
func (c *netCluster) frontDoor(node string, roots *x509.CertPool) *http.Client {
	d := &net.Dialer{Timeout: 3 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return d.DialContext(ctx, network, net.JoinHostPort(c.ip[node], port))
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// fetch GETs url and returns the trimmed body.
func fetch(cl *http.Client, url string) (string, *http.Response, error) {
	resp, err := cl.Get(url)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(body)), resp, err
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func pool(cert *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	if cert != nil {
		p.AddCert(cert)
	}
	return p
}

// writeCert writes a self-signed certificate for host and its key to
// dir/name.crt and dir/name.key.
func writeCert(t *testing.T, dir, name, host string) *x509.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ingress.SelfSigned(host+" "+name, host)
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{name + ".crt": certPEM, name + ".key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
