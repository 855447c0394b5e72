package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/envtest"
)

// encryptionConfig is an EncryptionConfiguration of Secrets whose aescbc
// keys are names (the first writes), each with a key of its own.
func encryptionConfig(names ...string) string {
	var keys strings.Builder
	for _, name := range names {
		fmt.Fprintf(&keys, "      - {name: %s, secret: %s}\n", name, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(name[len(name)-1:]), 32)))
	}
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n" +
		keys.String() + "  - identity: {}\n"
}

// With --encryption-provider-config-automatic-reload, a changed file
// replaces the keys while the server runs; a file that does not load
// leaves the ones in use.
func TestEncryptionProviderConfigReload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	file := filepath.Join(t.TempDir(), "encryption.yaml")
	write := func(content string) {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(encryptionConfig("key1"))
	s := startTestServer(t, noAgent, func(c *Config) {
		c.EncryptionProviderConfig, c.EncryptionProviderConfigAutomaticReload = file, true
	})
	etcd := etcdClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	// create writes a new Secret and says which key its bytes in etcd
	// name.
	create := func() string {
		n++
		name := fmt.Sprintf("s%d", n)
		var err error
		envtest.Eventually(t, "the admin can create Secrets", func() (bool, error) {
			_, err = s.admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
				StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err == nil, nil
		})
		resp, err := etcd.Get(ctx, "/registry/secrets/default/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Secret %s in etcd: %v %v", name, resp, err)
		}
		parts := strings.SplitN(string(resp.Kvs[0].Value), ":", 6)
		if len(parts) < 6 || parts[0] != "k8s" || parts[1] != "enc" {
			t.Fatalf("Secret %s is stored unencrypted", name)
		}
		return parts[4]
	}
	if key := create(); key != "key1" {
		t.Fatalf("the first Secret is encrypted with %q, want key1", key)
	}
	write(encryptionConfig("key2", "key1"))
	envtest.EventuallyTrue(t, "new Secrets encrypted with key2", func() bool { return create() == "key2" })
	if got, err := s.admin.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{}); err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("the Secret written with key1: %v %v", got, err)
	}
	write("kind: EncryptionConfiguration\nnot: valid\n")
	time.Sleep(2 * encryptionReloadEvery) // nothing to await: the file must change nothing
	if key := create(); key != "key2" {
		t.Errorf("after a broken file, a new Secret is encrypted with %q, want key2 still", key)
	}
}
