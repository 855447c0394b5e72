package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch/internal/join"
	"orch/internal/pki"
)

// TestJoinAcrossServerRestart joins an agent (internal/join, as `orch
// agent` will) to the real orch binary: the certificates work for client-go
// from the kubelet kubeconfig; after a server restart the stored
// certificates are used without asking, the agent is still accepted when
// it asks again (its node password survived in etcd), another agent is
// still refused its name, and a wrong secret is refused at once.
func TestJoinAcrossServerRestart(t *testing.T) {
	s := StartServer(t)
	token, err := os.ReadFile(filepath.Join(s.Dir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := join.Config{Server: s.URL(), Token: string(token), NodeName: "e2e-node", Hostname: "e2e-node.local",
		NodeIPs: []net.IP{net.ParseIP(agentIP)}, DataDir: dir}
	creds, err := join.Join(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	getAPIFromKubeconfig := func() {
		t.Helper()
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "agent", join.KubeconfigFile))
		if err != nil {
			t.Fatal(err)
		}
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Discovery().RESTClient().Get().AbsPath("/api").DoRaw(ctx); err != nil {
			t.Fatalf("GET /api with the kubelet kubeconfig: %v", err)
		}
	}
	getAPIFromKubeconfig()

	s.Restart()

	again, err := join.Join(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !again.ClientCertificate().Leaf.Equal(creds.ClientCertificate().Leaf) {
		t.Error("after a server restart the agent did not reuse its certificates")
	}
	getAPIFromKubeconfig()
	os.Remove(filepath.Join(dir, "agent", "tls", join.ClientCertFile))
	if _, err := join.Join(ctx, cfg); err != nil {
		t.Fatalf("the same agent asking again after a server restart: %v", err)
	}
	getAPIFromKubeconfig()

	other := cfg
	other.DataDir = t.TempDir()
	if _, err := join.Join(ctx, other); !errors.Is(err, join.ErrNodeNameTaken) {
		t.Errorf("another agent with the same name: %v, want ErrNodeNameTaken", err)
	}
	hash, _, _ := pki.ParseToken(string(token))
	other.Token, other.NodeName = pki.FormatToken(hash, "wrong"), "e2e-other"
	if _, err := join.Join(ctx, other); !errors.Is(err, join.ErrUnauthorized) || !strings.Contains(err.Error(), "data-dir/server/token") {
		t.Errorf("wrong secret: %v, want ErrUnauthorized saying where the token is", err)
	}
}
