package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servingSerial is the serial number of the certificate the server's
// apiserver presents.
func (s *Server) servingSerial(t *testing.T) string {
	t.Helper()
	conn, err := tls.Dial("tcp", fmt.Sprintf("%s:%d", s.host, s.Port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestCertificateRotate(t *testing.T) {
	s := StartServer(t)
	before := s.servingSerial(t)
	out, err := exec.Command(orchBin, "certificate", "rotate", "--data-dir", s.Dir).CombinedOutput()
	if err != nil {
		t.Fatalf("orch certificate rotate: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, func() string {
		if now := s.servingSerial(t); now == before {
			return "the apiserver still serves certificate " + now
		}
		return ""
	})
	// The rewritten admin kubeconfig holds a working new admin certificate.
	if got := s.Kubectl(t, "get", "ns", "default", "-o", "name"); strings.TrimSpace(got) != "namespace/default" {
		t.Fatalf("kubectl after the rotation: %q", got)
	}
	out, err = exec.Command(orchBin, "certificate", "rotate", "--data-dir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no server certificates in") {
		t.Fatalf("rotate in a dir without a server: %v %s", err, out)
	}
}

func TestManifestsDirectory(t *testing.T) {
	s := StartServer(t)
	client := s.client(t)
	dir := filepath.Join(s.Dir, "server", "manifests")
	if _, err := os.Stat(filepath.Join(dir, "local-storage.yaml")); err != nil {
		t.Fatalf("the built-in manifest was not written: %v", err)
	}
	eventually(t, 30*time.Second, func() string {
		if _, err := client.StorageV1().StorageClasses().Get(context.Background(), "local-storage", metav1.GetOptions{}); err != nil {
			return "built-in StorageClass local-storage: " + err.Error()
		}
		return ""
	})
	write := func(value string) {
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dropped\n  namespace: kube-system\ndata:\n  value: " + value + "\n"
		if err := os.WriteFile(filepath.Join(dir, "dropped.yaml"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(value string) {
		eventually(t, 30*time.Second, func() string {
			cm, err := client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "dropped", metav1.GetOptions{})
			if err != nil || cm.Data["value"] != value {
				return fmt.Sprintf("ConfigMap kube-system/dropped: %v, want value %s", err, value)
			}
			return ""
		})
	}
	write("one")
	wait("one")
	write("two")
	wait("two")
}
