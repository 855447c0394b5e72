package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfig(t *testing.T) {
	b := mustEnsure(t, testConfig(t.TempDir()))
	tests := []struct {
		name     string
		mode     os.FileMode
		existing os.FileMode // 0: no file before
		want     os.FileMode
	}{
		{name: "new 0600", mode: 0o600, want: 0o600},
		{name: "zero means 0600", mode: 0, want: 0o600},
		{name: "0644 on request", mode: 0o644, want: 0o644},
		{name: "replaces a looser file", mode: 0o600, existing: 0o666, want: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "etc", "orch")
			path := filepath.Join(dir, "orch.yaml")
			if tt.existing != 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, path, "old")
				if err := os.Chmod(path, tt.existing); err != nil {
					t.Fatal(err)
				}
			}
			const url = "https://127.0.0.1:6443"
			if err := WriteKubeconfig(path, tt.mode, url, b.CACertPEM, b.AdminCertPEM, b.AdminKeyPEM); err != nil {
				t.Fatal(err)
			}

			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.want {
				t.Errorf("mode = %o, want %o", fi.Mode().Perm(), tt.want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("dir holds %d entries, want only the kubeconfig (temp file left?)", len(entries))
			}

			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("clientcmd cannot load it: %v", err)
			}
			if cfg.CurrentContext != "default" {
				t.Errorf("current context = %q", cfg.CurrentContext)
			}
			cluster, user, ctx := cfg.Clusters["default"], cfg.AuthInfos["default"], cfg.Contexts["default"]
			if cluster == nil || user == nil || ctx == nil {
				t.Fatalf("missing default cluster/user/context: %+v", cfg)
			}
			if cluster.Server != url || !bytes.Equal(cluster.CertificateAuthorityData, b.CACertPEM) {
				t.Errorf("cluster = %+v", cluster)
			}
			if !bytes.Equal(user.ClientCertificateData, b.AdminCertPEM) || !bytes.Equal(user.ClientKeyData, b.AdminKeyPEM) {
				t.Errorf("user credentials differ from the admin cert")
			}
			if ctx.Cluster != "default" || ctx.AuthInfo != "default" {
				t.Errorf("context = %+v", ctx)
			}

			rest, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatalf("BuildConfigFromFlags: %v", err)
			}
			if rest.Host != url || len(rest.TLSClientConfig.CertData) == 0 {
				t.Errorf("rest config host %q certdata %d bytes", rest.Host, len(rest.TLSClientConfig.CertData))
			}
		})
	}
}

func TestWriteKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	if err := WriteKubeconfig("", 0o600, "https://x:6443", nil, nil, nil); err == nil {
		t.Errorf("empty path accepted")
	}
	if err := WriteKubeconfig(filepath.Join(dir, "k"), 0o600, "", nil, nil, nil); err == nil {
		t.Errorf("empty server URL accepted")
	}
	// The parent is a file: the directory cannot be created.
	writeTestFile(t, filepath.Join(dir, "file"), "x")
	if err := WriteKubeconfig(filepath.Join(dir, "file", "k"), 0o600, "https://x:6443", nil, nil, nil); err == nil {
		t.Errorf("kubeconfig under a file accepted")
	}
}
