package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestPauseIndex reads the pause image's OCI layout back: index.json names
// PauseRef, its index has a manifest per architecture with the right
// platform, every blob's name is its digest, and each manifest's config
// and layer are there, the layer holding /pause for that architecture.
func TestPauseIndex(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePause(&buf); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	for name, data := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
				t.Errorf("blob %s holds data of digest %x", name, sum)
			}
		}
	}
	blob := func(d descriptor) []byte {
		t.Helper()
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok || len(data) != d.Size {
			t.Fatalf("blob %s (%d bytes) missing or of another size", d.Digest, d.Size)
		}
		return data
	}
	var top indexJSON
	if err := json.Unmarshal(files["index.json"], &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if got := top.Manifests[0].Annotations["io.containerd.image.name"]; got != PauseRef || top.Manifests[0].MediaType != mediaIndex {
		t.Errorf("index.json names %q (%s)", got, top.Manifests[0].MediaType)
	}
	var index indexJSON
	if err := json.Unmarshal(blob(top.Manifests[0]), &index); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"amd64": "", "arm64": "", "arm": "v7"}
	if len(index.Manifests) != len(want) {
		t.Fatalf("index has %d manifests, want %d", len(index.Manifests), len(want))
	}
	for _, m := range index.Manifests {
		p := m.Platform
		if p == nil || p.OS != "linux" || want[p.Architecture] != p.Variant {
			t.Fatalf("manifest platform %+v", p)
		}
		var manifest struct {
			Config descriptor
			Layers []descriptor
		}
		if err := json.Unmarshal(blob(m), &manifest); err != nil || len(manifest.Layers) != 1 {
			t.Fatalf("manifest for %s: %v", p.Architecture, err)
		}
		var config ociConfig
		if err := json.Unmarshal(blob(manifest.Config), &config); err != nil || config.Architecture != p.Architecture || config.Variant != p.Variant {
			t.Errorf("config for %s: %+v %v", p.Architecture, config, err)
		}
		layer := tar.NewReader(bytes.NewReader(blob(manifest.Layers[0])))
		h, err := layer.Next()
		if err != nil || h.Name != "pause" {
			t.Fatalf("layer for %s: %v %v", p.Architecture, h, err)
		}
		program, _ := io.ReadAll(layer)
		wantProgram, _ := pauseProgram(p.Architecture)
		if !bytes.Equal(program, wantProgram) {
			t.Errorf("the %s layer's /pause is not the %s program", p.Architecture, p.Architecture)
		}
	}
}
