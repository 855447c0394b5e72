package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"orch/internal/envtest"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
	"orch/internal/kubelet/server"
	"orch/internal/kubelet/server/servertest"
	"orch/internal/pki"
)

// TestExecAndLogsOnContainerd runs a busybox container on a private
// containerd and execs and reads logs through the kubelet API with
// client-go, over SPDY (proxied to containerd's streaming server) and
// WebSocket (translated to SPDY by the kubelet).
func TestExecAndLogsOnContainerd(t *testing.T) {
	dir, cfg, log, sup := containerdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	containerdtest.ImportImages(t, ctx, cfg, log)
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })

	labels := map[string]string{"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.name": "box", "io.kubernetes.pod.uid": "uid-box"}
	hostNetwork := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "box", Namespace: "default", Uid: "uid-box"},
		Labels:       labels,
		LogDirectory: filepath.Join(dir, "pods", "box"),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostNetwork}},
	}
	if err := os.MkdirAll(sbConfig.LogDirectory, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.StopPodSandbox(ctx, sb); err != nil {
			t.Errorf("stop the sandbox: %v", err)
		}
		if err := rt.RemovePodSandbox(ctx, sb); err != nil {
			t.Errorf("remove the sandbox: %v", err)
		}
	})
	cLabels := map[string]string{"io.kubernetes.container.name": "main"}
	for k, v := range labels {
		cLabels[k] = v
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		Image:    &runtimeapi.ImageSpec{Image: images.BusyboxRef},
		Command:  []string{"sh", "-c", "echo hello; sleep 3600"},
		Labels:   cLabels,
		LogPath:  "main/0.log",
		Linux:    &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: hostNetwork}},
	}, sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}

	k, bundle := startKubelet(t, rt)
	client := httpClient(t, k)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, client, k.Host+"/containerLogs/default/box/main")
		if code == http.StatusOK && body == "hello\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Two scrapes a second apart give CPU rates; containerd gives memory.
	var sum statsapi.Summary
	for i := 0; i < 2; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		code, body := get(t, client, k.Host+"/stats/summary")
		if code != http.StatusOK {
			t.Fatalf("summary: %d %s", code, body)
		}
		sum = statsapi.Summary{}
		if err := json.Unmarshal([]byte(body), &sum); err != nil {
			t.Fatal(err)
		}
	}
	if sum.Node.CPU == nil || sum.Node.CPU.UsageNanoCores == nil || sum.Node.Memory == nil || sum.Node.Memory.WorkingSetBytes == nil {
		t.Errorf("node stats without CPU rate or working set: %+v", sum.Node)
	}
	if len(sum.Pods) != 1 || len(sum.Pods[0].Containers) != 1 {
		t.Fatalf("pod stats: %+v", sum.Pods)
	}
	pod, ctr := sum.Pods[0], sum.Pods[0].Containers[0]
	if pod.PodRef.Name != "box" || ctr.Name != "main" || ctr.CPU == nil || ctr.CPU.UsageNanoCores == nil ||
		ctr.Memory == nil || ctr.Memory.WorkingSetBytes == nil || *ctr.Memory.WorkingSetBytes == 0 ||
		pod.CPU == nil || pod.CPU.UsageNanoCores == nil || pod.Memory == nil || pod.Memory.WorkingSetBytes == nil {
		data, _ := json.Marshal(sum.Pods)
		t.Errorf("pod stats lack CPU rates or working sets: %s", data)
	}

	u := k.Host + "/exec/default/box/main?" + url.Values{"command": {"sh", "-c", "echo hi; read line; echo got $line >&2; exit 4"},
		"stdin": {"1"}, "stdout": {"1"}, "stderr": {"1"}}.Encode()
	for name, ex := range executors(t, k, u) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("it\n"), Stdout: &stdout, Stderr: &stderr})
			if err == nil || !strings.Contains(err.Error(), "exit code 4") {
				t.Errorf("exit: %v, want exit code 4", err)
			}
			if stdout.String() != "hi\n" || stderr.String() != "got it\n" {
				t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}

	// The whole chain: kubectl → apiserver → this kubelet → containerd.
	api := apiserverFor(t, k, bundle)
	envtest.KubectlContains(t, api, "hello", "logs", "box")
	envtest.KubectlContains(t, api, "busybox-ok", "exec", "box", "--", "sh", "-c", "echo busybox-ok")
	local := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(local, []byte("copied through kubectl cp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	envtest.KubectlContains(t, api, "", "cp", local, "default/box:/note.txt")
	envtest.KubectlContains(t, api, "copied through kubectl cp", "exec", "box", "--", "cat", "/note.txt")
	back := filepath.Join(t.TempDir(), "back.txt")
	envtest.KubectlContains(t, api, "", "cp", "default/box:/note.txt", back)
	if data, err := os.ReadFile(back); err != nil || string(data) != "copied through kubectl cp\n" {
		t.Errorf("kubectl cp from the container: %q %v", data, err)
	}
}

// apiserverFor starts a test apiserver whose Node node-1 is the kubelet
// at k (trusted through bundle's CA, reached with its admin certificate)
// and which has pod default/box on it.
func apiserverFor(t *testing.T, k *rest.Config, bundle *pki.Bundle) *rest.Config {
	t.Helper()
	cert, err := tls.X509KeyPair(bundle.AdminCertPEM, bundle.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	api := envtest.StartWith(t, envtest.Options{KubeletTLS: &tls.Config{RootCAs: bundle.CAPool(), Certificates: []tls.Certificate{cert}}})
	client := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(k.Host, "https://"))
	portNum, _ := strconv.Atoi(port)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(portNum)
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "box", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Image: images.BusyboxRef}}}}
	pod, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return api.Config
}

// startKubelet serves the kubelet API over rt on 127.0.0.1 and returns a
// client configuration for it as an admin.
func startKubelet(t *testing.T, rt *cri.Runtime) (*rest.Config, *pki.Bundle) {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "localhost", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := bundle.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		TLS:                  &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: bundle.CAPool()},
		SubjectAccessReviews: &servertest.AllowAll{},
		Runtime:              rt, Containers: server.NewCRIFinder(rt, nil), NodeName: "node-1", Log: containerdtest.Logger(t),
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
	t.Cleanup(func() { cancel(); <-done })
	return &rest.Config{Host: "https://" + l.Addr().String(),
		TLSClientConfig: rest.TLSClientConfig{CAData: bundle.CACertPEM, CertData: bundle.AdminCertPEM, KeyData: bundle.AdminKeyPEM}}, bundle
}
