package imageregistry

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func archive(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func get(t *testing.T, srv *httptest.Server, method, path string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// An image of a docker-save archive is served by tag and by digest, its
// manifest naming blobs that are there and whose contents match.
func TestRegistryServesArchive(t *testing.T) {
	reg := New()
	err := reg.Load(archive(t, map[string]string{
		"./manifest.json": `[{"Config":"abc.json","RepoTags":["registry.k8s.io/e2e-test-images/kitten:1.8"],"Layers":["l1/layer.tar","l2/layer.tar"]}]`,
		"./abc.json":      `{"rootfs":{}}`, "./l1/layer.tar": "layer one", "./l2/layer.tar": "layer two",
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	if resp, _ := get(t, srv, "GET", "/v2/"); resp.StatusCode != 200 || resp.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Fatalf("/v2/: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body := get(t, srv, "GET", "/v2/e2e-test-images/kitten/manifests/1.8")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != manifestType || resp.Header.Get("Docker-Content-Digest") != digest(body) {
		t.Fatalf("manifest: %d %v", resp.StatusCode, resp.Header)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{m.Config.Digest: `{"rootfs":{}}`}
	if len(m.Layers) != 2 || m.Layers[0].MediaType != layerType {
		t.Fatalf("layers %+v", m.Layers)
	}
	want[m.Layers[0].Digest], want[m.Layers[1].Digest] = "layer one", "layer two"
	for d, content := range want {
		resp, blob := get(t, srv, "GET", "/v2/e2e-test-images/kitten/blobs/"+d)
		if resp.StatusCode != 200 || string(blob) != content || digest(blob) != d {
			t.Errorf("blob %s: %d %q, want %q", d, resp.StatusCode, blob, content)
		}
	}
	if resp, b := get(t, srv, "HEAD", "/v2/e2e-test-images/kitten/manifests/"+digest(body)); resp.StatusCode != 200 || len(b) != 0 ||
		resp.ContentLength != int64(len(body)) {
		t.Errorf("HEAD by digest: %d, %d bytes, length %d", resp.StatusCode, len(b), resp.ContentLength)
	}
	for _, p := range []string{"/v2/e2e-test-images/kitten/manifests/1.9", "/v2/other/manifests/1.8", "/v2/e2e-test-images/kitten/blobs/sha256:00"} {
		if resp, _ := get(t, srv, "GET", p); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := get(t, srv, "PUT", "/v2/e2e-test-images/kitten/manifests/1.8"); resp.StatusCode != 405 {
		t.Errorf("PUT: %d, want 405", resp.StatusCode)
	}
}

func TestRegistryRefusesBadArchive(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no manifest":   {"x": "y"},
		"missing layer": {"manifest.json": `[{"Config":"c.json","RepoTags":["registry.k8s.io/a:1"],"Layers":["gone.tar"]}]`, "c.json": "{}"},
		"tag w/o host":  {"manifest.json": `[{"Config":"c.json","RepoTags":["a:1"]}]`, "c.json": "{}"},
	} {
		if err := New().Load(archive(t, files)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
