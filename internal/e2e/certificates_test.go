package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCertificateSigningRequest is issue 23's fourth acceptance, as a new
// user would do it: a key and a CSR made with openssl, a
// CertificateSigningRequest for kubernetes.io/kube-apiserver-client,
// `kubectl certificate approve`, then a kubeconfig with the issued
// certificate authenticates as that user and group, who is held to the
// bindings (forbidden, then allowed by a RoleBinding). A denied request
// gets no certificate.
func TestCertificateSigningRequest(t *testing.T) {
	s := StartServer(t)
	dir := t.TempDir()
	openssl := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	csr := func(name, subject string) string {
		key, req := filepath.Join(dir, name+".key"), filepath.Join(dir, name+".csr")
		openssl("genrsa", "-out", key, "2048")
		openssl("req", "-new", "-key", key, "-subj", subject, "-out", req)
		data, err := os.ReadFile(req)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  request: %s
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [client auth]
`, name, base64.StdEncoding.EncodeToString(data))
	}
	s.KubectlIn(t, csr("alice", "/CN=alice/O=devs")+"---\n"+csr("mallory", "/CN=mallory"), "apply", "-f", "-")
	s.Kubectl(t, "certificate", "approve", "alice")
	s.Kubectl(t, "certificate", "deny", "mallory")

	var cert []byte
	eventually(t, time.Minute, func() string {
		out := s.Kubectl(t, "get", "csr", "alice", "-o", "jsonpath={.status.certificate}")
		var err error
		if cert, err = base64.StdEncoding.DecodeString(out); err != nil || len(cert) == 0 {
			return "alice's certificate to be issued"
		}
		return ""
	})
	if out := s.Kubectl(t, "get", "csr", "alice"); !strings.Contains(out, "Approved,Issued") {
		t.Errorf("kubectl get csr alice:\n%s", out)
	}
	if out := s.Kubectl(t, "get", "csr", "mallory", "-o", "jsonpath={.status.conditions[0].type} {.status.certificate}"); out != "Denied " {
		t.Errorf("mallory's request: %q, want Denied and no certificate", out)
	}
	certFile := filepath.Join(dir, "alice.crt")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	// openssl sees who signed it: the cluster CA.
	out, err := exec.Command("openssl", "x509", "-in", certFile, "-noout", "-subject", "-issuer", "-ext", "extendedKeyUsage").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CN = alice") || !strings.Contains(string(out), "TLS Web Client Authentication") {
		t.Errorf("openssl x509 of the certificate: %v\n%s", err, out)
	}

	// alice's kubeconfig: the admin's cluster, alice's certificate and key.
	kubeconfig := filepath.Join(dir, "alice.yaml")
	admin, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, admin, 0o600); err != nil {
		t.Fatal(err)
	}
	asAlice := []string{"KUBECONFIG=" + kubeconfig}
	for _, args := range [][]string{
		{"config", "set-credentials", "alice", "--client-certificate=" + certFile, "--client-key=" + filepath.Join(dir, "alice.key"), "--embed-certs=true"},
		{"config", "set-context", "--current", "--user=alice"},
	} {
		succeeded(t, "kubectl "+strings.Join(args, " "), s.Run(t, Cmd{Args: args, Env: asAlice}))
	}
	whoami := succeeded(t, "kubectl auth whoami", s.Run(t, Cmd{Args: []string{"auth", "whoami"}, Env: asAlice}))
	if !strings.Contains(whoami, "alice") || !strings.Contains(whoami, "devs") {
		t.Errorf("kubectl auth whoami with alice's certificate:\n%s", whoami)
	}
	if r := s.Run(t, Cmd{Args: []string{"get", "pods"}, Env: asAlice}); r.Code == 0 || !strings.Contains(r.Stderr, `User "alice" cannot list resource "pods"`) {
		t.Errorf("alice listing pods before any binding: exit %d, %s", r.Code, r.Stderr)
	}
	s.Kubectl(t, "create", "rolebinding", "devs-view", "--clusterrole=view", "--group=devs", "--namespace=default")
	eventually(t, 30*time.Second, func() string {
		if r := s.Run(t, Cmd{Args: []string{"get", "pods"}, Env: asAlice}); r.Code != 0 {
			return "alice (group devs) to list pods once bound: " + r.Stderr
		}
		return ""
	})
	if r := s.Run(t, Cmd{Args: []string{"get", "pods", "-n", "kube-system"}, Env: asAlice}); r.Code == 0 {
		t.Errorf("alice lists pods of kube-system, where devs have no binding")
	}
}
