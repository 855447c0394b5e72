package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"orch/internal/envtest"
	"orch/internal/kubelet/server/servertest"
)

// kubeletCluster is a test apiserver whose Node node-1 is a test kubelet
// (servertest) running pod default/web with containers app and sidecar.
type kubeletCluster struct {
	api     *envtest.Server
	kubelet *servertest.Kubelet
	client  kubernetes.Interface
	ids     []string
}

func startKubeletCluster(t *testing.T) *kubeletCluster {
	t.Helper()
	k := servertest.Start(t, servertest.Options{})
	cert, err := tls.X509KeyPair(k.PKI.AdminCertPEM, k.PKI.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	api := envtest.StartWith(t, envtest.Options{KubeletTLS: &tls.Config{RootCAs: k.PKI.CAPool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	client := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "nowhere.invalid"}, {Type: corev1.NodeInternalIP, Address: k.Host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(k.Port)
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-1",
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "sidecar", Image: "busybox"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := k.AddPod(t, "default", "web", "app", "sidecar")
	return &kubeletCluster{api: api, kubelet: k, client: client, ids: ids}
}

func TestKubectlLogsAndExecThroughTheKubelet(t *testing.T) {
	c := startKubeletCluster(t)
	c.kubelet.WriteLog(t, c.ids[0], "stdout F hello from app", "stderr F and its stderr")
	envtest.KubectlContains(t, c.api.Config, "hello from app\nand its stderr\n", "logs", "web", "-c", "app")
	envtest.KubectlContains(t, c.api.Config, "and its stderr", "logs", "web", "-c", "app", "--tail=1")
	// kubectl picks the first container itself; the API refuses to guess.
	envtest.KubectlContains(t, c.api.Config, "hello from app", "logs", "web")
	_, err := c.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{}).Stream(context.Background())
	if !apierrors.IsBadRequest(err) || err.Error() != "a container name must be specified for pod web, choose one of: [app sidecar]" {
		t.Errorf("pods/log without a container: %v", err)
	}
	out, err := envtest.Kubectl(t, c.api.Config, "logs", "web", "-c", "nope")
	if err == nil || !strings.Contains(out+err.Error(), "container nope is not valid for pod web") {
		t.Errorf("kubectl logs -c nope: %v %q", err, out)
	}
	out, err = envtest.Kubectl(t, c.api.Config, "logs", "web", "-c", "app", "--previous")
	if err == nil || !strings.Contains(out+err.Error(), `previous terminated container "app" in pod "web" not found`) {
		t.Errorf("kubectl logs --previous: %v %q", err, out)
	}
	if out, err := envtest.Kubectl(t, c.api.Config, "logs", "pending"); err != nil || out != "" {
		t.Errorf("logs of a pod not scheduled: %v %q, want nothing", err, out)
	}
	envtest.KubectlContains(t, c.api.Config, "hi there", "exec", "web", "-c", "app", "--", "echo", "hi", "there")
	envtest.KubectlContains(t, c.api.Config, "attached", "attach", "web", "-c", "app")
	out, err = envtest.Kubectl(t, c.api.Config, "exec", "pending", "--", "echo")
	if err == nil || !strings.Contains(out+err.Error(), "pod pending does not have a host assigned") {
		t.Errorf("exec in a pod not scheduled: %v %q", err, out)
	}
}

func TestLogsFollowThroughTheApiserver(t *testing.T) {
	c := startKubeletCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := int64(0)
	stream, err := c.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Container: "app", Follow: true, TailLines: &tail}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	lines := bufio.NewReader(stream)
	c.kubelet.WriteLog(t, c.ids[0], "stdout F followed")
	if line, err := lines.ReadString('\n'); err != nil || line != "followed\n" {
		t.Fatalf("followed line %q, %v", line, err)
	}
	c.kubelet.Fake.Exit(c.ids[0], 0, "Completed")
	if rest, err := io.ReadAll(lines); err != nil || len(rest) > 0 {
		t.Fatalf("after the exit: %q, %v", rest, err)
	}

	bad := int64(-1)
	_, err = c.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Container: "app", TailLines: &bad}).Stream(ctx)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "tailLines: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("tailLines=-1: %v", err)
	}
}

func TestExecWebSocketTranslationAndSPDY(t *testing.T) {
	c := startKubeletCluster(t)
	u := c.api.URL + "/api/v1/namespaces/default/pods/web/exec?" + url.Values{
		"container": {"app"}, "command": {"fail", "7"}, "stdout": {"true"}, "stderr": {"true"}, "stdin": {"true"}}.Encode()
	parsed, _ := url.Parse(u)
	spdyExec, err := remotecommand.NewSPDYExecutor(c.api.Config, "POST", parsed)
	if err != nil {
		t.Fatal(err)
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(c.api.Config, "GET", u)
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range map[string]remotecommand.Executor{"spdy": spdyExec, "websocket": wsExec} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			var exitErr exec.CodeExitError
			if !errors.As(err, &exitErr) || exitErr.Code != 7 || stderr.String() != "failing\n" {
				t.Fatalf("err %v (%T), stderr %q; want exit code 7 and failing", err, err, stderr.String())
			}
		})
	}
	// A terminal's size travels through the translation.
	tty := c.api.URL + "/api/v1/namespaces/default/pods/web/exec?" + url.Values{"container": {"app"}, "command": {"tty"}, "stdout": {"true"}, "tty": {"true"}}.Encode()
	wsTTY, _ := remotecommand.NewWebSocketExecutor(c.api.Config, "GET", tty)
	sizes := make(chan remotecommand.TerminalSize, 1)
	sizes <- remotecommand.TerminalSize{Width: 100, Height: 30}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := wsTTY.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: sizeQueue(sizes)}); err != nil || out.String() != "tty 100x30\n" {
		t.Fatalf("tty: %v %q", err, out.String())
	}
}

type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

func TestPortForwardAndNodeProxyThroughTheApiserver(t *testing.T) {
	c := startKubeletCluster(t)
	u, _ := url.Parse(c.api.URL + "/api/v1/namespaces/default/pods/web/portforward")
	transport, upgrader, err := spdy.RoundTripperFor(c.api.Config)
	if err != nil {
		t.Fatal(err)
	}
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, c.api.Config)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]httpstream.Dialer{
		"spdy":      spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u),
		"websocket": wsDialer,
	} {
		t.Run(name, func(t *testing.T) { servertest.PortForwardEcho(t, d, 80) })
	}

	raw, err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/healthz").DoRaw(context.Background())
	if err != nil || string(raw) != "ok" {
		t.Fatalf("nodes/proxy/healthz: %q %v", raw, err)
	}
	raw, err = c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/pods").DoRaw(context.Background())
	if err != nil || !strings.Contains(string(raw), `"PodList"`) {
		t.Fatalf("nodes/proxy/pods: %q %v", raw, err)
	}
	// node-1 is on this host: no port but its kubelet's may be reached.
	raw, err = c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1:2379/proxy/version").DoRaw(context.Background())
	if !apierrors.IsForbidden(err) || !strings.Contains(string(raw), "only its kubelet port") {
		t.Fatalf("nodes/proxy to another port of this host: %s, err = %v, want Forbidden", raw, err)
	}
}

// TestLogsOverWebSocket reads pods/log over a WebSocket, as the conformance
// test "should support retrieving logs from the container over websockets"
// does: binary.k8s.io gives the log bytes as binary messages,
// base64.binary.k8s.io as base64 text.
func TestLogsOverWebSocket(t *testing.T) {
	c := startKubeletCluster(t)
	c.kubelet.WriteLog(t, c.ids[0], "stdout F container is alive")
	for _, tc := range []struct{ protocol, want string }{
		{"binary.k8s.io", "container is alive\n"},
		{"base64.binary.k8s.io", base64.StdEncoding.EncodeToString([]byte("container is alive\n"))},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			u, err := url.Parse(c.api.Config.Host + "/api/v1/namespaces/default/pods/web/log?container=app")
			if err != nil {
				t.Fatal(err)
			}
			u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
			cfg, err := websocket.NewConfig(u.String(), "http://localhost")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Protocol = []string{tc.protocol}
			if cfg.TlsConfig, err = rest.TLSConfigFor(c.api.Config); err != nil {
				t.Fatal(err)
			}
			if c.api.Config.BearerToken != "" {
				cfg.Header.Set("Authorization", "Bearer "+c.api.Config.BearerToken)
			}
			ws, err := websocket.DialConfig(cfg)
			if err != nil {
				t.Fatalf("dial %s: %v", u, err)
			}
			defer ws.Close()
			var got string
			for {
				var msg string
				if err := websocket.Message.Receive(ws, &msg); err != nil {
					if err != io.EOF {
						t.Fatalf("receive: %v", err)
					}
					break
				}
				got += msg
			}
			if got != tc.want {
				t.Errorf("got %q over %s, want %q", got, tc.protocol, tc.want)
			}
		})
	}
}
