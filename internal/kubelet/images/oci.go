package images

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Image is one platform's image of a multi-platform index.
type Image struct {
	Files  []File
	Config Config // its Arch (and, for arm, v7) is the manifest's platform
}

// The OCI media types WriteIndex writes.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// WriteIndex writes an OCI image layout tarball (oci-layout, index.json,
// blobs/sha256/...) holding one image named ref (e.g. "orch.dev/pause:1"):
// an image index with a manifest per element of imgs, each of one
// uncompressed layer. containerd's import names it from index.json's
// io.containerd.image.name annotation.
func WriteIndex(w io.Writer, ref string, imgs []Image) error {
	blobs := map[string][]byte{}
	add := func(data []byte) string {
		digest := "sha256:" + sha256Hex(data)
		blobs[digest] = data
		return digest
	}
	var manifests []descriptor
	for _, img := range imgs {
		layer, err := layerTar(img.Files)
		if err != nil {
			return err
		}
		layerDigest := add(layer)
		config, err := json.Marshal(imageConfig(img.Config, strings.TrimPrefix(layerDigest, "sha256:")))
		if err != nil {
			return err
		}
		manifest, err := json.Marshal(struct {
			SchemaVersion int          `json:"schemaVersion"`
			MediaType     string       `json:"mediaType"`
			Config        descriptor   `json:"config"`
			Layers        []descriptor `json:"layers"`
		}{2, mediaManifest,
			descriptor{MediaType: mediaConfig, Digest: add(config), Size: len(config)},
			[]descriptor{{MediaType: mediaLayer, Digest: layerDigest, Size: len(layer)}}})
		if err != nil {
			return err
		}
		manifests = append(manifests, descriptor{MediaType: mediaManifest, Digest: add(manifest), Size: len(manifest),
			Platform: &platform{Architecture: img.Config.Arch, OS: "linux", Variant: variant(img.Config.Arch)}})
	}
	index, err := json.Marshal(indexJSON{2, mediaIndex, manifests})
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	top, err := json.Marshal(indexJSON{2, mediaIndex, []descriptor{{MediaType: mediaIndex, Digest: add(index), Size: len(index),
		Annotations: map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": tag}}}})
	if err != nil {
		return err
	}
	out := tar.NewWriter(w)
	if err := writeFile(out, "oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	for _, name := range sortedKeys(blobs) {
		if err := writeFile(out, "blobs/sha256/"+strings.TrimPrefix(name, "sha256:"), 0o644, blobs[name]); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := writeFile(out, "index.json", 0o644, top); err != nil {
		return err
	}
	return out.Close()
}

type indexJSON struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// variant is the OCI platform variant of a GOARCH: orch's arm is ARMv7.
func variant(arch string) string {
	if arch == "arm" {
		return "v7"
	}
	return ""
}
