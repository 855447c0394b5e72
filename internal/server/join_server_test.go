package server

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/controller/nodepassword"
	"orch/internal/envtest"
	"orch/internal/join"
	"orch/internal/pki"
)

// testServer is a real `orch server` (Run) in this process on free
// loopback ports and a temporary data directory.
type testServer struct {
	url, dataDir, token string
	admin               kubernetes.Interface
	caPEM               []byte
	cfg                 Config
	// stop stops the server and waits until it has (also done at the
	// end of the test).
	stop func()
}

func startTestServer(t *testing.T, options ...func(*Config)) *testServer {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{
		DataDir: dir, WriteKubeconfig: filepath.Join(dir, "admin.yaml"), WriteKubeconfigMode: 0o600,
		HTTPSPort: envtest.FreePort(t), BindAddress: "127.0.0.1", AdvertiseAddress: "127.0.0.1",
		ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		EtcdClientPort: envtest.FreePort(t), EtcdPeerPort: envtest.FreePort(t), UnsafeNoFsync: true,
	}
	for _, option := range options {
		option(&cfg)
	}
	dir = cfg.DataDir
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, testLogger()) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("server: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("the server did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	s := &testServer{url: "https://" + net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPSPort)), dataDir: dir, cfg: cfg, stop: stop}
	// The token and the kubeconfig are written before the listener serves.
	envtest.Eventually(t, "server wrote its token and kubeconfig", func() (bool, error) {
		select {
		case err := <-done:
			done <- err // for stop
			t.Fatalf("server stopped: %v", err)
		default:
		}
		token, err1 := os.ReadFile(filepath.Join(dir, "server", "token"))
		_, err2 := os.Stat(cfg.WriteKubeconfig)
		if err1 != nil || err2 != nil {
			return false, nil
		}
		s.token = strings.TrimSpace(string(token))
		return true, nil
	})
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.WriteKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s.admin = kubernetes.NewForConfigOrDie(rc)
	if s.caPEM, err = os.ReadFile(filepath.Join(dir, "server", "tls", pki.CACertFile)); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *testServer) agent(t *testing.T, name, dataDir string) join.Config {
	return join.Config{Server: s.url, Token: s.token, NodeName: name, Hostname: name + ".test",
		NodeIPs: []net.IP{net.ParseIP("192.0.2.7"), net.ParseIP("10.9.8.7")}, DataDir: dataDir, Log: testLogger()}
}

// getAPI GETs /api with rc and fails the test if it is refused.
func getAPI(t *testing.T, rc *rest.Config) {
	t.Helper()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Discovery().RESTClient().Get().AbsPath("/api").DoRaw(ctx); err != nil {
		t.Fatalf("GET /api as the node: %v", err)
	}
}

// TestJoinRealServer joins agents to a real server: success, reuse,
// re-join with the same keys, wrong secret, duplicate node name, renewal,
// and the name freed when its Node is deleted.
func TestJoinRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	s := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	caPool, err := pki.CAPoolFromPEM(s.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	dirA := t.TempDir()
	cfgA := s.agent(t, "agent-a", dirA)

	// Join retries while the server starts (503 until kube-system exists).
	creds, err := join.Join(ctx, cfgA)
	if err != nil {
		t.Fatal(err)
	}
	client, serving := creds.ClientCertificate().Leaf, creds.ServingCertificate().Leaf
	t.Run("certificates", func(t *testing.T) {
		if client.Subject.CommonName != "system:node:agent-a" || !slices.Equal(client.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("client certificate subject %v", client.Subject)
		}
		if _, err := client.Verify(x509.VerifyOptions{Roots: caPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("client certificate: %v", err)
		}
		if len(client.DNSNames)+len(client.IPAddresses) != 0 {
			t.Errorf("client certificate has SANs %v %v", client.DNSNames, client.IPAddresses)
		}
		for _, host := range []string{"agent-a.test", "agent-a", "192.0.2.7", "10.9.8.7"} {
			if _, err := serving.Verify(x509.VerifyOptions{Roots: caPool, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("serving certificate for %s: %v", host, err)
			}
		}
		if life := serving.NotAfter.Sub(serving.NotBefore); life < pki.LeafValidity {
			t.Errorf("serving certificate lives %s, want a year", life)
		}
		if !slices.Equal(creds.CAPEM, s.caPEM) {
			t.Error("the agent's CA is not the server's")
		}
	})
	t.Run("kubeconfig", func(t *testing.T) {
		rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dirA, "agent", join.KubeconfigFile))
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.ParseCertificatePEM(rc.CertData)
		if err != nil || cert.Subject.CommonName != "system:node:agent-a" {
			t.Fatalf("kubeconfig user %v, %v", cert, err)
		}
		getAPI(t, rc)
		getAPI(t, creds.RESTConfig())
	})
	t.Run("component identities", func(t *testing.T) {
		for _, user := range join.ComponentUsers() {
			if !creds.HasIdentity(user) {
				t.Errorf("no certificate for %s", user)
				continue
			}
			data, err := os.ReadFile(filepath.Join(dirA, "agent", "tls", join.ComponentCertFile(user)))
			if err != nil {
				t.Fatal(err)
			}
			cert, err := pki.ParseCertificatePEM(data)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != user || len(cert.Subject.Organization) != 0 || len(cert.DNSNames)+len(cert.IPAddresses) != 0 {
				t.Errorf("%s certificate: subject %v, SANs %v %v", user, cert.Subject, cert.DNSNames, cert.IPAddresses)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: caPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("%s certificate: %v", user, err)
			}
			getAPI(t, creds.RESTConfigFor(user))
		}
	})
	t.Run("password secret", func(t *testing.T) {
		secret, err := s.admin.CoreV1().Secrets("kube-system").Get(ctx, "agent-a.node-password.orch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := os.ReadFile(filepath.Join(dirA, "agent", join.NodePasswordFile))
		if !passwordMatches(secret.Data["hash"], strings.TrimSpace(string(pw))) {
			t.Error("the secret does not hold the hash of the agent's node password")
		}
	})

	t.Run("wrong secret", func(t *testing.T) {
		cfg := s.agent(t, "agent-w", t.TempDir())
		hash, _, _ := pki.ParseToken(s.token)
		cfg.Token = pki.FormatToken(hash, "not-the-secret")
		_, err := join.Join(ctx, cfg)
		if !errors.Is(err, join.ErrUnauthorized) || strings.Contains(err.Error(), "gave up") {
			t.Fatalf("Join: %v, want ErrUnauthorized at once", err)
		}
		if !strings.Contains(err.Error(), "data-dir/server/token") {
			t.Errorf("%q does not say where the token is", err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "agent", "tls", join.ClientCertFile)); !os.IsNotExist(err) {
			t.Errorf("a certificate was stored: %v", err)
		}
	})

	t.Run("agent token", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(s.dataDir, "server", "agent-token"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.agent(t, "agent-t", t.TempDir())
		cfg.Token = strings.TrimSpace(string(data))
		if !strings.Contains(cfg.Token, "::node:") {
			t.Fatalf("agent token %q", cfg.Token)
		}
		if _, err := join.Join(ctx, cfg); err != nil {
			t.Fatalf("Join with the agent token: %v", err)
		}
		if _, err := join.NewServerJoin(ctx, s.url, cfg.Token, testLogger()); !errors.Is(err, join.ErrInvalidToken) {
			t.Errorf("a server joining with the agent token: %v", err)
		}
	})

	t.Run("apiserver address", func(t *testing.T) {
		cfg := s.agent(t, "agent-l", t.TempDir())
		cfg.NodeIPs = append(cfg.NodeIPs, net.ParseIP("127.0.0.1"))
		_, err := join.Join(ctx, cfg)
		if !errors.Is(err, join.ErrRejected) || !strings.Contains(err.Error(), "IP address 127.0.0.1") || !strings.Contains(err.Error(), "(403)") {
			t.Fatalf("Join: %v, want a 403 naming 127.0.0.1", err)
		}
	})

	t.Run("the server's own agent", func(t *testing.T) {
		// It joins with the server's names and addresses (its host name
		// is in the apiserver's certificate).
		envtest.Eventually(t, "the server's own agent joined", func() (bool, error) {
			_, err := os.Stat(filepath.Join(s.dataDir, "agent", "tls", join.ServingCertFile))
			return err == nil, nil
		})
	})

	t.Run("duplicate node name", func(t *testing.T) {
		_, err := join.Join(ctx, s.agent(t, "agent-a", t.TempDir()))
		if !errors.Is(err, join.ErrNodeNameTaken) {
			t.Fatalf("Join: %v, want ErrNodeNameTaken", err)
		}
		want := "node name agent-a is already taken by another agent; use --node-name or delete the Secret kube-system/agent-a.node-password.orch"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	})

	t.Run("same agent again", func(t *testing.T) {
		again, err := join.Join(ctx, cfgA)
		if err != nil {
			t.Fatal(err)
		}
		if !again.ClientCertificate().Leaf.Equal(client) {
			t.Error("a restart did not reuse the stored certificate")
		}
		// Without its certificates the agent asks the server again, which
		// accepts the same node password; the keys are kept.
		for _, f := range []string{join.ClientCertFile, join.ServingCertFile} {
			os.Remove(filepath.Join(dirA, "agent", "tls", f))
		}
		rejoined, err := join.Join(ctx, cfgA)
		if err != nil {
			t.Fatalf("re-join of the same agent: %v", err)
		}
		leaf := rejoined.ClientCertificate().Leaf
		if leaf.Equal(client) {
			t.Error("no new certificate")
		}
		if !client.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(leaf.PublicKey) {
			t.Error("the re-join did not reuse the agent's key")
		}
		creds = rejoined
	})

	t.Run("renewal", func(t *testing.T) {
		// Nine months on, less than a third of the year is left.
		cfg := cfgA
		cfg.Clock = clocktesting.NewFakeClock(time.Now().Add(9 * 30 * 24 * time.Hour))
		old := creds.ClientCertificate()
		rc := creds.RESTConfig()
		getAPI(t, rc) // a connection made with the old certificate
		r, err := join.NewRenewer(cfg, creds)
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Start(rctx) }()
		defer func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("Renewer: %v", err)
			}
		}()
		envtest.Eventually(t, "certificates renewed", func() (bool, error) {
			return creds.ClientCertificate() != old, nil
		})
		renewed := creds.ClientCertificate().Leaf
		// (The old one is seconds older: the same NotAfter, to the second, is fine.)
		if renewed.Subject.CommonName != "system:node:agent-a" || renewed.NotAfter.Before(old.Leaf.NotAfter) || renewed.SerialNumber.Cmp(old.Leaf.SerialNumber) == 0 {
			t.Errorf("renewed certificate %v serial %s until %s; the old one: serial %s until %s", renewed.Subject, renewed.SerialNumber,
				renewed.NotAfter, old.Leaf.SerialNumber, old.Leaf.NotAfter)
		}
		if _, err := renewed.Verify(x509.VerifyOptions{Roots: caPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Error(err)
		}
		getAPI(t, rc) // the same rest.Config, now with the new certificate
		kc, err := clientcmd.BuildConfigFromFlags("", creds.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		if cert, err := pki.ParseCertificatePEM(kc.CertData); err != nil || !cert.Equal(renewed) {
			t.Errorf("kubeconfig does not hold the renewed certificate: %v", err)
		}
		getAPI(t, kc)
	})

	t.Run("deleting the Node frees its name", func(t *testing.T) {
		node, err := s.admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "agent-a"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secrets := s.admin.CoreV1().Secrets("kube-system")
		envtest.Eventually(t, "the Node's UID on its password secret", func() (bool, error) {
			secret, err := secrets.Get(ctx, "agent-a.node-password.orch", metav1.GetOptions{})
			return err == nil && secret.Annotations[nodepassword.NodeUIDAnnotation] == string(node.UID), err
		})
		if err := s.admin.CoreV1().Nodes().Delete(ctx, "agent-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, "password secret deleted with the Node", func() (bool, error) {
			_, err := secrets.Get(ctx, "agent-a.node-password.orch", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if _, err := join.Join(ctx, s.agent(t, "agent-a", t.TempDir())); err != nil {
			t.Errorf("another agent cannot take the freed name: %v", err)
		}
	})
}
