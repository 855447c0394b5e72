// Package servertest runs the kubelet API (internal/kubelet/server) for
// tests without a container runtime: a fake CRI (cri.Fake) whose Exec,
// Attach and PortForward answer URLs of a real CRI streaming server
// (k8s.io/cri-streaming) with scripted behaviour, over TLS with
// certificates of a test cluster CA.
//
// Scripted exec commands: "echo ARGS…" prints ARGS; "cat" copies stdin to
// stdout; "fail CODE" prints "failing" on stderr and exits with CODE;
// "tty" prints "tty WIDTHxHEIGHT" after the first resize. Attach prints
// "attached", copies one line of stdin to stdout and ends. Port-forward echoes every port.
//
// Requests are authorized by Options.SubjectAccessReviews, by default an
// AllowAll.
package servertest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/server"
	"orch/internal/pki"
)

// Kubelet is a running test kubelet API.
type Kubelet struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// Host and Port are where it listens.
	Host string
	Port int
	// PKI is the test cluster CA (and its apiserver serving and admin certificates).
	PKI *pki.Bundle
	// Client is a client-go configuration for the kubelet as system:admin.
	Client *rest.Config
	// Fake is the fake CRI behind the server.
	Fake *cri.Fake
	// LogDir holds the pods' log directories.
	LogDir string

	mu   sync.Mutex
	pods []*corev1.Pod
}

// Options change what Start sets up.
type Options struct {
	// TokenReviews checks bearer tokens; nil refuses them.
	TokenReviews server.TokenReviewer
	// SubjectAccessReviews authorizes requests; nil is an AllowAll.
	SubjectAccessReviews server.SubjectAccessReviewer
}

// Start runs a kubelet API on 127.0.0.1 until the test ends.
func Start(t testing.TB, opts Options) *Kubelet {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "localhost", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{PKI: bundle, Fake: cri.NewFake(), LogDir: t.TempDir()}
	k.Fake.SetImage("busybox", 1, false)
	rt := &runtime{Fake: k.Fake, streams: startStreamingServer(t)}
	cert, err := bundle.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: bundle.CAPool(), MinVersion: tls.VersionTLS12}
	if opts.SubjectAccessReviews == nil {
		opts.SubjectAccessReviews = &AllowAll{}
	}
	srv, err := server.New(server.Config{
		Addr: "127.0.0.1:0", TLS: tlsConfig, TokenReviews: opts.TokenReviews, SubjectAccessReviews: opts.SubjectAccessReviews, Runtime: rt,
		Containers: server.NewCRIFinder(k.Fake, k.Pods), Pods: k.Pods, NodeName: "node-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet server: %v", err)
		}
	})
	k.Port = l.Addr().(*net.TCPAddr).Port
	k.Host = "127.0.0.1"
	k.URL = "https://" + l.Addr().String()
	k.Client = &rest.Config{Host: k.URL, TLSClientConfig: rest.TLSClientConfig{CAData: bundle.CACertPEM, CertData: bundle.AdminCertPEM, KeyData: bundle.AdminKeyPEM}}
	return k
}

// Pods returns the pods the server knows (those AddPod added, or SetPods set).
func (k *Kubelet) Pods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*corev1.Pod(nil), k.pods...)
}

// SetPods replaces the pods the server knows.
func (k *Kubelet) SetPods(pods []*corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods = pods
}

// AddPod creates a pod with one running container per name in the fake
// CRI (labelled as the kubelet labels them, logging to LogDir) and adds it
// to Pods; it returns the containers' IDs.
func (k *Kubelet) AddPod(t testing.TB, namespace, name string, containers ...string) []string {
	t.Helper()
	ctx := context.Background()
	uid := types.UID(namespace + "-" + name + "-uid")
	sbConfig := k.sandboxConfig(namespace, name)
	sandbox, err := k.Fake.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	var ids []string
	for _, c := range containers {
		id := k.StartContainer(t, sandbox, sbConfig, c, 0)
		ids = append(ids, id)
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, ContainerID: "containerd://" + id,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	k.mu.Lock()
	k.pods = append(k.pods, pod)
	k.mu.Unlock()
	return ids
}

// sandboxConfig is the sandbox config AddPod gives pod namespace/name.
func (k *Kubelet) sandboxConfig(namespace, name string) *runtimeapi.PodSandboxConfig {
	uid := namespace + "-" + name + "-uid"
	labels := map[string]string{"io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.name": name, "io.kubernetes.pod.uid": uid}
	return &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid},
		Labels: labels, LogDirectory: filepath.Join(k.LogDir, namespace+"_"+name+"_"+uid)}
}

// AddEphemeralContainer starts an ephemeral (kubectl debug) container
// named container targeting target in pod namespace/name, which AddPod
// made, and adds it to the pod's spec and status; it returns its ID.
func (k *Kubelet) AddEphemeralContainer(t testing.TB, namespace, name, container, target string) string {
	t.Helper()
	sbConfig := k.sandboxConfig(namespace, name)
	sandboxes, err := k.Fake.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: sbConfig.Labels})
	if err != nil || len(sandboxes) == 0 {
		t.Fatalf("no sandbox for pod %s/%s: %v", namespace, name, err)
	}
	id := k.StartContainer(t, sandboxes[0].Id, sbConfig, container, 0)
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, p := range k.pods {
		if p.Namespace == namespace && p.Name == name {
			p = p.DeepCopy()
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{TargetContainerName: target,
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: container, Image: "busybox", Stdin: true, TTY: true}})
			p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, corev1.ContainerStatus{Name: container,
				ContainerID: "containerd://" + id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
			k.pods[i] = p
		}
	}
	return id
}

// StartContainer creates and starts container name (attempt n) in sandbox.
func (k *Kubelet) StartContainer(t testing.TB, sandbox string, sbConfig *runtimeapi.PodSandboxConfig, name string, attempt uint32) string {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"io.kubernetes.container.name": name}
	for key, v := range sbConfig.Labels {
		labels[key] = v
	}
	if err := os.MkdirAll(filepath.Join(sbConfig.LogDirectory, name), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(name, strconv.Itoa(int(attempt))+".log")
	if err := os.WriteFile(filepath.Join(sbConfig.LogDirectory, logPath), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := k.Fake.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: labels, LogPath: logPath}, sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Fake.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// WriteLog appends lines (each "stdout|stderr F|P text") to container
// id's log file, stamped now.
func (k *Kubelet) WriteLog(t testing.TB, id string, lines ...string) {
	t.Helper()
	st, err := k.Fake.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(st.Status.LogPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), l); err != nil {
			t.Fatal(err)
		}
	}
}

// runtime is the fake CRI with streaming answered by a real streaming server.
type runtime struct {
	*cri.Fake
	streams streaming.Server
}

func (r *runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if _, err := r.Fake.Exec(ctx, req); err != nil {
		return nil, err
	}
	return r.streams.GetExec(req)
}

func (r *runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if _, err := r.Fake.Attach(ctx, req); err != nil {
		return nil, err
	}
	return r.streams.GetAttach(req)
}

func (r *runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if _, err := r.Fake.PortForward(ctx, req); err != nil {
		return nil, err
	}
	return r.streams.GetPortForward(req)
}

// startStreamingServer runs a CRI streaming server on 127.0.0.1 with the
// scripted behaviour of the package doc.
func startStreamingServer(t testing.TB) streaming.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base, _ := url.Parse("http://" + ts.Listener.Addr().String())
	cfg := streaming.DefaultConfig
	cfg.Addr, cfg.BaseURL = ts.Listener.Addr().String(), base
	srv, err := streaming.NewServer(cfg, scripted{})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return srv
}

type scripted struct{}

func (scripted) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	switch cmd[0] {
	case "echo":
		fmt.Fprintln(out, strings.Join(cmd[1:], " "))
	case "cat":
		io.Copy(out, in)
	case "fail":
		code, _ := strconv.Atoi(cmd[1])
		fmt.Fprintln(errw, "failing")
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	case "tty":
		select {
		case size := <-resize:
			fmt.Fprintf(out, "tty %dx%d\n", size.Width, size.Height)
		case <-time.After(10 * time.Second):
			fmt.Fprintln(out, "no resize")
		}
	default:
		return fmt.Errorf("unknown command %q", cmd[0])
	}
	return nil
}

func (scripted) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	fmt.Fprintln(out, "attached")
	if in != nil {
		// One line, then detach: an attach does not end when stdin does.
		line, _ := bufio.NewReader(in).ReadString('\n')
		io.WriteString(out, line)
	}
	return nil
}

func (scripted) PortForward(ctx context.Context, sandbox string, port int32, stream io.ReadWriteCloser) error {
	_, err := io.Copy(stream, stream)
	return err
}
