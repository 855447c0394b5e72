// Package imageregistry serves image archives (`docker save` layout, as
// internal/kubelet/images and ../shared/conformance/images.sh write them)
// read-only over the registry HTTP API (v2): an image tagged
// registry.k8s.io/e2e-test-images/kitten:1.8 is served as
// e2e-test-images/kitten:1.8 (a mirror drops the host), an OCI manifest of
// its config and its uncompressed layers, by tag and by digest. Tests of
// registry mirrors pull from it, and make conformance serves the suite's
// images with it (scripts/conformance-registry).
package imageregistry

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"
)

const (
	manifestType = "application/vnd.oci.image.manifest.v1+json"
	configType   = "application/vnd.oci.image.config.v1+json"
	layerType    = "application/vnd.oci.image.layer.v1.tar"
)

// Registry is the images loaded: manifests by "repo:tag" and
// "repo@digest", blobs by digest.
type Registry struct {
	manifests map[string][]byte
	blobs     map[string][]byte
}

func New() *Registry {
	return &Registry{manifests: map[string][]byte{}, blobs: map[string][]byte{}}
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int    `json:"size"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// Load adds the images of one `docker save` archive.
func (r *Registry) Load(archive io.Reader) error {
	files := map[string][]byte{}
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files[path.Clean(strings.TrimPrefix(h.Name, "./"))] = data
	}
	var images []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &images); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	for _, img := range images {
		blob := func(name, mediaType string) (descriptor, error) {
			data, ok := files[path.Clean(name)]
			if !ok {
				return descriptor{}, fmt.Errorf("%s is not in the archive", name)
			}
			d := descriptor{MediaType: mediaType, Digest: digest(data), Size: len(data)}
			r.blobs[d.Digest] = data
			return d, nil
		}
		m := manifest{SchemaVersion: 2, MediaType: manifestType}
		var err error
		if m.Config, err = blob(img.Config, configType); err != nil {
			return err
		}
		for _, l := range img.Layers {
			d, err := blob(l, layerType)
			if err != nil {
				return err
			}
			m.Layers = append(m.Layers, d)
		}
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		for _, tag := range img.RepoTags {
			repo, name, ok := strings.Cut(tag, "/") // drop the registry host
			i := strings.LastIndex(name, ":")
			if !ok || i < 0 || !strings.Contains(repo, ".") {
				return fmt.Errorf("tag %q does not name a registry host, a repository and a tag", tag)
			}
			r.manifests[name] = data
			r.manifests[name[:i]+"@"+digest(data)] = data
		}
	}
	return nil
}

func digest(data []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(data)) }

// ServeHTTP answers GET and HEAD of /v2/, /v2/REPO/manifests/REF and
// /v2/REPO/blobs/DIGEST.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	p := req.URL.Path
	if p == "/v2/" || p == "/v2" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		return
	}
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		notFound(w, "NAME_UNKNOWN")
		return
	}
	if i := strings.LastIndex(rest, "/manifests/"); i > 0 {
		repo, ref := rest[:i], rest[i+len("/manifests/"):]
		key := repo + ":" + ref
		if strings.HasPrefix(ref, "sha256:") {
			key = repo + "@" + ref
		}
		data, ok := r.manifests[key]
		if !ok {
			notFound(w, "MANIFEST_UNKNOWN")
			return
		}
		serve(w, req, manifestType, data)
		return
	}
	if i := strings.LastIndex(rest, "/blobs/"); i > 0 {
		data, ok := r.blobs[rest[i+len("/blobs/"):]]
		if !ok {
			notFound(w, "BLOB_UNKNOWN")
			return
		}
		serve(w, req, "application/octet-stream", data)
		return
	}
	notFound(w, "NAME_UNKNOWN")
}

func serve(w http.ResponseWriter, req *http.Request, mediaType string, data []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest(data))
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(data))
}

func notFound(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":"not found"}]}`, code)
}
