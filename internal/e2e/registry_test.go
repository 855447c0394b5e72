package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/kubelet/images"
)

// TestRegistryPull pulls from private registries on the host's loopback,
// made known to the agent's containerd by hosts.toml files in its certs.d,
// both requiring basic auth: one over plain HTTP (also under a name that
// only its hosts.toml resolves), one over HTTPS with a certificate of its
// own CA. Without a pull secret the pull fails with the registry's 401 and
// backs off; with a kubernetes.io/dockerconfigjson secret the pod runs;
// imagePullPolicy Always pulls again; a tag the registry lacks fails.
func TestRegistryPull(t *testing.T) {
	reg := startTestRegistry(t, "test/busybox", "1", "puller", "s3cret", false)
	tlsReg := startTestRegistry(t, "test/busybox", "1", "puller", "s3cret", true)
	s := StartServerWithAgent(t)
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")

	// The agent made the registry config dir. containerd reads it at
	// each pull, so hosts.toml files written now are used. containerd
	// 1.6 ignores the top-level keys (server, ca): the [host] tables
	// are what it uses.
	certsDir := filepath.Join(s.Dir, "agent", "etc", "containerd", "certs.d")
	if fi, err := os.Stat(certsDir); err != nil || !fi.IsDir() {
		t.Fatalf("registry config dir after agent start: %v", err)
	}
	writeHostsToml(t, certsDir, reg.host, fmt.Sprintf(`server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, reg.host, reg.host))
	writeHostsToml(t, certsDir, tlsReg.host, fmt.Sprintf(`server = "https://%s"

[host."https://%s"]
  capabilities = ["pull", "resolve"]
  ca = "ca.crt"
`, tlsReg.host, tlsReg.host))
	if err := os.WriteFile(filepath.Join(certsDir, tlsReg.host, "ca.crt"), tlsReg.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// containerd talks plain HTTP to a registry on 127.0.0.1 even without
	// its hosts.toml; a registry by name is found only through its own.
	writeHostsToml(t, certsDir, "registry.orch.test", fmt.Sprintf(`server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, reg.host, reg.host))
	image := reg.host + "/test/busybox:1"

	t.Run("noPullSecret", func(t *testing.T) {
		s.KubectlIn(t, registryPod("reg-noauth", image, "IfNotPresent", ""), "apply", "-f", "-")
		// ErrImagePull is the container's state only until the next
		// sync, soon after: its events stay. The registry's 401 reaches
		// the event as containerd 2.x words it.
		const refused = "authorization failed: no basic auth credentials"
		waitEvents(t, client, "reg-noauth", "Pulling", "Failed:"+refused, "Failed:Error: ErrImagePull", "BackOff")
		waitPod(t, client, "reg-noauth", time.Minute, func(p *corev1.Pod) string {
			w := mainStatus(p).State.Waiting
			if w == nil || w.Reason != "ImagePullBackOff" || !strings.Contains(w.Message, `Back-off pulling image "`+image+`"`) || !strings.Contains(w.Message, refused) {
				return fmt.Sprintf("waiting %+v, want ImagePullBackOff with the pull's refusal (as upstream's)", w)
			}
			return ""
		})
		if n := reg.count("", "/manifests/", http.StatusOK); n != 0 {
			t.Errorf("the registry served %d manifests without credentials", n)
		}
	})

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil,
			`{"auths": {%q: {"username": "puller", "password": "s3cret"}, "https://%s/v2/": {"auth": %q}, "registry.orch.test": {"auth": %[3]q}}}`,
			reg.host, tlsReg.host, base64.StdEncoding.EncodeToString([]byte("puller:s3cret")))},
	}
	if _, err := client.CoreV1().Secrets("default").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pullSecret := "  imagePullSecrets: [{name: regcred}]\n"

	t.Run("pullSecret", func(t *testing.T) {
		s.KubectlIn(t, registryPod("reg-auth", image, "IfNotPresent", pullSecret), "apply", "-f", "-")
		p := waitRegistryPodRunning(t, client, "reg-auth")
		if id := mainStatus(p).ImageID; !strings.Contains(id, reg.manifestDigest) {
			t.Errorf("imageID %q, want the manifest's digest %s", id, reg.manifestDigest)
		}
		waitEvents(t, client, "reg-auth", "Pulling", "Pulled:Successfully pulled", "Started")
		// The layer the agent did not have came from the registry.
		if reg.count(http.MethodGet, "/blobs/"+reg.extraLayer, http.StatusOK) == 0 {
			t.Errorf("the registry did not serve the image's own layer: %v", reg.log())
		}
	})

	t.Run("pullAlways", func(t *testing.T) {
		// containerd resolves the tag with a HEAD and fetches only the
		// content it lacks: a pull is a new manifest request.
		before := reg.count("", "/manifests/1", http.StatusOK)
		s.KubectlIn(t, registryPod("reg-always", image, "Always", pullSecret), "apply", "-f", "-")
		waitRegistryPodRunning(t, client, "reg-always")
		waitEvents(t, client, "reg-always", "Pulling", "Pulled:Successfully pulled")
		if after := reg.count("", "/manifests/1", http.StatusOK); after <= before {
			t.Errorf("imagePullPolicy Always: %d manifest requests before the pod, %d after, want more: %v", before, after, reg.log())
		}
		t.Logf("the registry's requests: %v", reg.log())
	})

	t.Run("registryByName", func(t *testing.T) {
		s.KubectlIn(t, registryPod("reg-byname", "registry.orch.test/test/busybox:1", "IfNotPresent", pullSecret), "apply", "-f", "-")
		waitRegistryPodRunning(t, client, "reg-byname")
	})

	t.Run("privateCA", func(t *testing.T) {
		s.KubectlIn(t, registryPod("reg-tls", tlsReg.host+"/test/busybox:1", "IfNotPresent", pullSecret), "apply", "-f", "-")
		p := waitRegistryPodRunning(t, client, "reg-tls")
		if id := mainStatus(p).ImageID; !strings.Contains(id, tlsReg.manifestDigest) {
			t.Errorf("imageID %q, want the manifest's digest %s", id, tlsReg.manifestDigest)
		}
	})

	t.Run("imageVolume", func(t *testing.T) {
		// The registry's image (busybox's layer and its own) mounted
		// read-only into a busybox container, pulled with the pod's
		// secret as its pull policy Always says.
		before := reg.count("", "/manifests/1", http.StatusOK)
		s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: reg-volume}
spec:
  terminationGracePeriodSeconds: 1
  tolerations: [{operator: Exists}]
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, "cat /volume/registry.txt; test -x /volume/bin/busybox && echo has-busybox; touch /volume/x 2>/dev/null || echo read-only; sleep 3600"]
    volumeMounts: [{name: img, mountPath: /volume}]
  volumes:
  - name: img
    image: {reference: %q, pullPolicy: Always}
`, pullSecret, images.BusyboxRef, image), "apply", "-f", "-")
		waitRegistryPodRunning(t, client, "reg-volume")
		eventually(t, time.Minute, func() string {
			if out := s.Kubectl(t, "logs", "reg-volume"); out != "pulled from the test registry\nhas-busybox\nread-only\n" {
				return fmt.Sprintf("logs %q", out)
			}
			return ""
		})
		if after := reg.count("", "/manifests/1", http.StatusOK); after <= before {
			t.Errorf("pullPolicy Always: %d manifest requests before the pod, %d after", before, after)
		}
		s.Kubectl(t, "delete", "pod", "reg-volume", "--wait")
		eventually(t, time.Minute, func() string {
			mounts, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				return err.Error()
			}
			for _, line := range strings.Split(string(mounts), "\n") {
				if strings.Contains(line, s.Dir) && strings.Contains(line, "/volumes/kubernetes.io~image/") {
					return "an image volume is still mounted: " + line
				}
			}
			return ""
		})
	})

	t.Run("missingTag", func(t *testing.T) {
		s.KubectlIn(t, registryPod("reg-notag", reg.host+"/test/busybox:nope", "IfNotPresent", pullSecret), "apply", "-f", "-")
		waitEvents(t, client, "reg-notag", "Failed:not found", "Failed:Error: ErrImagePull")
		waitPod(t, client, "reg-notag", time.Minute, func(p *corev1.Pod) string {
			if w := mainStatus(p).State.Waiting; w == nil || !strings.Contains(w.Reason, "ImagePull") || !strings.Contains(w.Message, "not found") {
				return fmt.Sprintf("waiting %+v", w)
			}
			return ""
		})
	})
}

// waitRegistryPodRunning waits until pod name runs, its image pulled.
func waitRegistryPodRunning(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	return waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("phase %s, %+v", p.Status.Phase, mainStatus(p).State)
		}
		return ""
	})
}

// writeHostsToml writes certsDir/host/hosts.toml, containerd's
// configuration of registry host.
func writeHostsToml(t *testing.T, certsDir, host, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(certsDir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certsDir, host, "hosts.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// registryPod is a pod of one container named main running image with
// pullPolicy; extraSpec goes into its spec (e.g. imagePullSecrets).
func registryPod(name, image, pullPolicy, extraSpec string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  # Whatever the node's taints: a nearly full disk gives it DiskPressure.
  tolerations: [{operator: Exists}]
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: %s
    command: [sh, -c, "cat /registry.txt && sleep 3600"]
`, name, extraSpec, image, pullPolicy)
}

// waitEvents waits until pod name has events with each of the reasons
// want names, in any order; "Reason:text" also wants text in its message.
func waitEvents(t *testing.T, client kubernetes.Interface, name string, want ...string) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		var seen []string
		for _, w := range want {
			reason, text, _ := strings.Cut(w, ":")
			found := false
			for _, e := range list.Items {
				if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
					found = true
				}
			}
			if !found {
				for _, e := range list.Items {
					if e.InvolvedObject.Name == name {
						seen = append(seen, e.Reason+": "+e.Message)
					}
				}
				return fmt.Sprintf("no event %q for pod %s; it has %q", w, name, seen)
			}
		}
		return ""
	})
}

// testRegistry is a read-only OCI distribution registry serving one image
// (repository repo, tag tag) over HTTP or HTTPS on 127.0.0.1, to clients
// with HTTP basic auth user:password: GET /v2/, HEAD and GET of
// /v2/<repo>/manifests/<tag or digest> and /v2/<repo>/blobs/<digest>.
type testRegistry struct {
	host           string // 127.0.0.1:PORT
	repo, tag      string
	user, password string
	manifest       []byte
	manifestDigest string
	extraLayer     string // digest of the layer only this registry has
	blobs          map[string][]byte
	caPEM          []byte // the serving certificate, when it serves HTTPS

	mu       sync.Mutex
	requests []registryRequest
}

// registryRequest is one request the registry answered.
type registryRequest struct {
	method, path string
	status       int
}

// startTestRegistry serves the busybox test image, with a layer of its
// own added (/registry.txt): the agent's containerd already holds
// busybox's layer from its air-gap import, and would otherwise fetch no
// blob. With withTLS it serves HTTPS, with a certificate for 127.0.0.1
// that caPEM holds.
func startTestRegistry(t *testing.T, repo, tag, user, password string, withTLS bool) *testRegistry {
	t.Helper()
	r := &testRegistry{repo: repo, tag: tag, user: user, password: password, blobs: map[string][]byte{}}
	r.buildImage(t)
	srv := httptest.NewUnstartedServer(r)
	if withTLS {
		srv.StartTLS()
		r.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	r.host = srv.Listener.Addr().String()
	return r
}

// buildImage makes the registry's OCI manifest and blobs from the busybox
// test image's docker-archive (its manifest.json, config and layer).
func (r *testRegistry) buildImage(t *testing.T) {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "busybox.tar")
	if err := images.WriteBusyboxFile(archive); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, archive)
	var entries []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &entries); err != nil || len(entries) != 1 || len(entries[0].Layers) != 1 {
		t.Fatalf("busybox archive manifest.json: %v %s", err, files["manifest.json"])
	}
	layer := files[entries[0].Layers[0]]
	extra := tarOf(t, "registry.txt", "pulled from the test registry\n")

	// The config lists each layer's digest (uncompressed, so the same
	// as the blob's) in rootfs.diff_ids.
	var config map[string]any
	if err := json.Unmarshal(files[entries[0].Config], &config); err != nil {
		t.Fatal(err)
	}
	rootfs := config["rootfs"].(map[string]any)
	rootfs["diff_ids"] = append(rootfs["diff_ids"].([]any), digestOf(extra))
	configJSON, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int    `json:"size"`
	}
	add := func(mediaType string, data []byte) descriptor {
		r.blobs[digestOf(data)] = data
		return descriptor{mediaType, digestOf(data), len(data)}
	}
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{2, "application/vnd.oci.image.manifest.v1+json",
		add("application/vnd.oci.image.config.v1+json", configJSON),
		[]descriptor{add("application/vnd.oci.image.layer.v1.tar", layer), add("application/vnd.oci.image.layer.v1.tar", extra)}}
	if r.manifest, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	r.manifestDigest, r.extraLayer = digestOf(r.manifest), digestOf(extra)
}

// ServeHTTP answers the distribution API, logging each request.
func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	status := r.serve(w, req)
	r.mu.Lock()
	r.requests = append(r.requests, registryRequest{req.Method, req.URL.Path, status})
	r.mu.Unlock()
}

func (r *testRegistry) serve(w http.ResponseWriter, req *http.Request) int {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if user, password, ok := req.BasicAuth(); !ok || user != r.user || password != r.password {
		w.Header().Set("WWW-Authenticate", `Basic realm="orch-test-registry"`)
		return registryError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return registryError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "read-only registry")
	}
	if req.URL.Path == "/v2/" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return http.StatusOK
	}
	prefix := "/v2/" + r.repo + "/"
	rest, ok := strings.CutPrefix(req.URL.Path, prefix)
	if !ok {
		return registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
	}
	var data []byte
	var mediaType string
	if ref, ok := strings.CutPrefix(rest, "manifests/"); ok {
		if ref != r.tag && ref != r.manifestDigest {
			return registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		}
		data, mediaType = r.manifest, "application/vnd.oci.image.manifest.v1+json"
	} else if digest, ok := strings.CutPrefix(rest, "blobs/"); ok {
		if data, ok = r.blobs[digest]; !ok {
			return registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
		}
		mediaType = "application/octet-stream"
	} else {
		return registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "unknown path")
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.Header().Set("Docker-Content-Digest", digestOf(data))
	if req.Method == http.MethodGet {
		w.Write(data)
	}
	return http.StatusOK
}

// registryError writes a distribution API error and returns its status.
func registryError(w http.ResponseWriter, status int, code, message string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors": [{"code": %q, "message": %q}]}`, code, message)
	return status
}

// count is how many requests with method ("" for any), a path containing
// path and status the registry answered.
func (r *testRegistry) count(method, path string, status int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.requests {
		if (method == "" || q.method == method) && strings.Contains(q.path, path) && q.status == status {
			n++
		}
	}
	return n
}

// log lists the requests the registry answered.
func (r *testRegistry) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.requests {
		out = append(out, fmt.Sprintf("%s %s %d", q.method, q.path, q.status))
	}
	return out
}

// readTar reads the regular files of the tar archive at path by name.
func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// tarOf is a tar archive (an image layer) of one file.
func tarOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, content)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// digestOf is data's OCI digest, sha256:<hex>.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
