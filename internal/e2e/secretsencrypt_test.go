package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/etcdsnapshot"
)

// TestSecretsEncryption is issue 19's acceptance 3 as a user tries it:
// with --secrets-encryption a Secret is ciphertext in etcd and in a
// snapshot; orch secrets-encrypt rotates the key (a replace of an unchanged
// Secret rewrites it with the new key in between, as upstream's
// re-encryption does); the Secret reads back after the rotation, a
// restart and a restore of the snapshot on a new host.
func TestSecretsEncryption(t *testing.T) {
	const plaintext = "hunter2-in-plain-text"
	s := startServer(t, false, "127.0.0.1", "--secrets-encryption")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	secrets := s.client(t).CoreV1().Secrets("default")
	created, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": plaintext}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(s.etcdPorts[0])
	orch := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, orchBin, append(args, "--data-dir", s.Dir, "--etcd-endpoint", endpoint)...).CombinedOutput()
		if err != nil {
			t.Fatalf("orch %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	eventually(t, time.Minute, func() string {
		if out := orch("secrets-encrypt", "status"); !strings.Contains(out, "Server Encryption Hashes: All hashes match") {
			return out
		}
		return ""
	})
	status := orch("secrets-encrypt", "status")
	for _, want := range []string{"Encryption Status: Enabled", "Current Rotation Stage: start", "AES-CBC"} {
		if !strings.Contains(status, want) {
			t.Errorf("status has no %q:\n%s", want, status)
		}
	}
	first := regexp.MustCompile(`aescbckey-\S+`).FindString(status)

	// Between rotate and reencrypt, replacing the Secret with itself
	// rewrites it (a new resourceVersion); before, it changes nothing.
	unchanged := func() string {
		got, err := secrets.Get(ctx, "s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updated, err := secrets.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return updated.ResourceVersion
	}
	if rv := unchanged(); rv != created.ResourceVersion {
		t.Errorf("an unchanged replace before the rotation wrote the Secret (%s → %s)", created.ResourceVersion, rv)
	}
	orch("secrets-encrypt", "prepare")
	eventually(t, time.Minute, func() string { // rotate itself checks it
		if out := orch("secrets-encrypt", "status"); !strings.Contains(out, "All hashes match") {
			return out
		}
		return ""
	})
	orch("secrets-encrypt", "rotate")
	eventually(t, time.Minute, func() string {
		if out := orch("secrets-encrypt", "status"); !strings.Contains(out, "All hashes match") {
			return out
		}
		return ""
	})
	if rv := unchanged(); rv == created.ResourceVersion {
		t.Error("an unchanged replace after rotate did not rewrite the Secret with the new key")
	}
	if out := orch("secrets-encrypt", "reencrypt"); !strings.Contains(out, "stage reencrypt_finished") {
		t.Errorf("reencrypt said:\n%s", out)
	}
	status = orch("secrets-encrypt", "status")
	current := regexp.MustCompile(`aescbckey-\S+`).FindString(status)
	if !strings.Contains(status, "Current Rotation Stage: reencrypt_finished") || current == first || strings.Contains(status, first) {
		t.Errorf("after the rotation from %s:\n%s", first, status)
	}
	// rotate-keys does all three again.
	if out := orch("secrets-encrypt", "rotate-keys"); strings.Count(out, ": done;") != 3 {
		t.Errorf("rotate-keys said:\n%s", out)
	}
	current = regexp.MustCompile(`aescbckey-\S+`).FindString(orch("secrets-encrypt", "status"))

	readBack := func(who string, s *Server) {
		t.Helper()
		got, err := s.client(t).CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != plaintext {
			t.Fatalf("%s: the Secret reads %v, %v", who, got.Data, err)
		}
	}
	readBack("after the rotations", s)

	out := orch("etcd-snapshot", "save", "--node-name", "e2e")
	path := regexp.MustCompile(`saved (\S+\.db)`).FindStringSubmatch(out)
	if path == nil {
		t.Fatalf("no snapshot path in %q", out)
	}
	snapshot, err := os.ReadFile(path[1])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(snapshot, []byte(plaintext)) || !bytes.Contains(snapshot, []byte("k8s:enc:aescbc:v1:"+current+":")) {
		t.Errorf("the snapshot holds the plain text, or no ciphertext of the current key %s", current)
	}

	s.Stop()
	raw, err := etcdsnapshot.ReadKey(filepath.Join(s.Dir, "server", "db", "etcd"), "/registry/secrets/default/s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:"+current+":")) || bytes.Contains(raw, []byte(plaintext)) {
		t.Errorf("the Secret in etcd is %q…, want ciphertext of %s", raw[:min(len(raw), 48)], current)
	}
	s.Start()
	readBack("after a restart", s)
	token := s.Token()
	s.Stop()

	fresh := t.TempDir()
	restore := exec.CommandContext(ctx, orchBin, "server", "--data-dir", fresh, "--cluster-reset", "--cluster-reset-restore-path", path[1], "--token", token,
		"--write-kubeconfig", filepath.Join(fresh, "unused.yaml"), "--disable-agent")
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("orch server --cluster-reset: %v\n%s", err, out)
	}
	restored := &Server{t: t, Dir: fresh, Kubeconfig: filepath.Join(fresh, "kubeconfig.yaml"), bindAddress: "127.0.0.1", host: "127.0.0.1"}
	restored.pickPorts()
	restored.stopWhenDone(false)
	restored.Start()
	readBack("after a restore on a new host", restored)
}
