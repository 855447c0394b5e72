package containerd_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/imageregistry"
	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
)

func TestHostsFiles(t *testing.T) {
	r, err := containerd.ParseRegistries([]byte(`
mirrors:
  docker.io:
    endpoint: ["mirror.example.com:5000", "http://10.0.0.5:5000/"]
  "*":
    endpoint: ["https://all.example.com"]
configs:
  mirror.example.com:5000:
    auth: {username: u, password: p}
    tls: {ca_file: /etc/ssl/ca.pem, cert_file: /c.pem, key_file: /k.pem}
  self-signed.example.com:
    tls: {insecure_skip_verify: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	files, err := containerd.HostsFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"docker.io": `
[host."https://mirror.example.com:5000"]
  capabilities = ["pull", "resolve"]
  ca = "/etc/ssl/ca.pem"
  client = [["/c.pem", "/k.pem"]]
  [host."https://mirror.example.com:5000".header]
    Authorization = "Basic dTpw"

[host."http://10.0.0.5:5000"]
  capabilities = ["pull", "resolve"]

[host."https://registry-1.docker.io"]
  capabilities = ["pull", "resolve"]
`,
		"_default": `
[host."https://all.example.com"]
  capabilities = ["pull", "resolve"]
`,
		"mirror.example.com:5000": `
[host."https://mirror.example.com:5000"]
  capabilities = ["pull", "resolve"]
  ca = "/etc/ssl/ca.pem"
  client = [["/c.pem", "/k.pem"]]
  [host."https://mirror.example.com:5000".header]
    Authorization = "Basic dTpw"
`,
		"self-signed.example.com": `
[host."https://self-signed.example.com"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`,
	}
	if len(files) != len(want) {
		t.Errorf("files for %d registries, want %d", len(files), len(want))
	}
	for dir, w := range want {
		got := string(files[dir])
		if body, ok := strings.CutPrefix(got, "# Written by orch from its registries.yaml; replaced at every start.\n"); !ok || body != w {
			t.Errorf("%s/hosts.toml:\n%s\nwant (after orch's line):\n%s", dir, got, w)
		}
	}
}

func TestRegistriesErrors(t *testing.T) {
	for name, yaml := range map[string]string{
		"unknown key":       "mirrors:\n  docker.io:\n    endpoints: [x]\n",
		"rewrite":           "mirrors:\n  docker.io:\n    rewrite: {\"^a/(.*)\": \"b/$1\"}\n",
		"endpoint path":     "mirrors:\n  docker.io:\n    endpoint: [\"https://m.example.com/v2/proxy\"]\n",
		"endpoint scheme":   "mirrors:\n  docker.io:\n    endpoint: [\"ftp://m.example.com\"]\n",
		"identity token":    "configs:\n  m.example.com:\n    auth: {identity_token: t}\n",
		"bad auth":          "configs:\n  m.example.com:\n    auth: {auth: \"!!\"}\n",
		"cert without key":  "configs:\n  m.example.com:\n    tls: {cert_file: /c.pem}\n",
		"config with a URL": "configs:\n  https://m.example.com:\n    tls: {insecure_skip_verify: true}\n",
	} {
		r, err := containerd.ParseRegistries([]byte(yaml))
		if err == nil {
			_, err = containerd.HostsFiles(r)
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// ApplyRegistries writes orch's files, keeps the user's and removes its
// own that registries.yaml no longer names.
func TestApplyRegistries(t *testing.T) {
	dir := t.TempDir()
	certs, path := filepath.Join(dir, "certs.d"), filepath.Join(dir, "registries.yaml")
	user := filepath.Join(certs, "docker.io", "hosts.toml")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(user, []byte("# mine\n"), 0o644)
	os.WriteFile(path, []byte("mirrors:\n  docker.io: {endpoint: [m1.example.com]}\n  quay.io: {endpoint: [m2.example.com]}\n"), 0o644)
	log := containerdtest.Logger(t)
	if err := containerd.ApplyRegistries(certs, path, log); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(user); string(data) != "# mine\n" {
		t.Errorf("the user's hosts.toml was replaced: %q", data)
	}
	quay := filepath.Join(certs, "quay.io", "hosts.toml")
	if data, err := os.ReadFile(quay); err != nil || !bytes.Contains(data, []byte(`[host."https://m2.example.com"]`)) {
		t.Fatalf("quay.io: %q, %v", data, err)
	}
	if st, _ := os.Stat(quay); st.Mode().Perm() != 0o600 {
		t.Errorf("quay.io/hosts.toml mode %v, want 0600", st.Mode().Perm())
	}
	os.Remove(path)
	if err := containerd.ApplyRegistries(certs, path, log); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(quay); !os.IsNotExist(err) {
		t.Errorf("orch's quay.io file stays after registries.yaml is gone: %v", err)
	}
	os.WriteFile(path, []byte("mirrors: [\n"), 0o644)
	if err := containerd.ApplyRegistries(certs, path, log); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a broken registries.yaml: %v, want an error naming it", err)
	}
}

// The real containerd pulls an image of a registry that does not exist
// (registry.invalid) from the mirror registries.yaml names, with its
// credentials.
func TestMirrorPullWithRealContainerd(t *testing.T) {
	containerdtest.RequireRuntime(t)
	log := containerdtest.Logger(t)
	dir := t.TempDir()
	cfg := containerdtest.Config(t, dir)
	var archive bytes.Buffer
	if err := images.Write(&archive, "registry.invalid/team/box:1", []images.File{{Path: "/hello", Mode: 0o644, Data: []byte("hi")}},
		images.Config{Arch: runtime.GOARCH, Cmd: []string{"/hello"}}); err != nil {
		t.Fatal(err)
	}
	reg := imageregistry.New()
	if err := reg.Load(&archive); err != nil {
		t.Fatal(err)
	}
	var authorized atomic.Int32
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("puller:secret"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	path := filepath.Join(dir, "registries.yaml")
	os.WriteFile(path, []byte("mirrors:\n  registry.invalid:\n    endpoint: [\"http://"+host+"\"]\nconfigs:\n  \""+host+"\":\n    auth: {username: puller, password: secret}\n"), 0o600)
	if err := os.MkdirAll(cfg.CertsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := containerd.ApplyRegistries(cfg.CertsDir, path, log); err != nil {
		t.Fatal(err)
	}
	sup := containerdtest.StartContainerd(t, dir, cfg, log, containerdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "registry.invalid/team/box:1"}, nil, nil)
	if err != nil {
		t.Fatalf("pull through the mirror: %v", err)
	}
	if ref == "" || authorized.Load() == 0 {
		t.Errorf("pulled %q with %d authorized requests to the mirror", ref, authorized.Load())
	}
}
