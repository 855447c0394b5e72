// Package images builds the container images orch carries inside its binary
// (the pod sandbox "pause" image, a multi-platform OCI index for amd64,
// arm64 and arm) and the ones its tests run (busybox, a docker-archive), as
// tarballs that containerd imports (`ctr images import`, or the client's
// Import). A docker-archive is a manifest.json naming a config and one
// layer, the config JSON with the layer's diff ID, and the layer as a plain
// tar; an OCI layout is index.json and blobs. No registry and no Docker are
// involved.
package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"time"
)

// File is one entry of an image's single layer.
type File struct {
	Path string // absolute path inside the image, e.g. "/bin/sh"
	Mode int64  // permission bits
	Data []byte // contents of a regular file
	Link string // when set, a symbolic link to Link instead of a file
}

// Config is what the image's config says about running it.
type Config struct {
	Arch       string   // GOARCH-style: amd64, arm64, arm (v7)
	Entrypoint []string // may be empty
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
}

// Write writes a docker-archive tarball of one image named ref (e.g.
// "orch.dev/pause:1") made of files, to w.
func Write(w io.Writer, ref string, files []File, cfg Config) error {
	layer, err := layerTar(files)
	if err != nil {
		return err
	}
	layerDigest := sha256Hex(layer)
	config, err := json.Marshal(imageConfig(cfg, layerDigest))
	if err != nil {
		return err
	}
	configName := sha256Hex(config) + ".json"
	layerName := layerDigest + "/layer.tar"
	manifest, err := json.Marshal([]archiveManifest{{Config: configName, RepoTags: []string{ref}, Layers: []string{layerName}}})
	if err != nil {
		return err
	}
	out := tar.NewWriter(w)
	for _, entry := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer}, {"manifest.json", manifest}} {
		if err := writeFile(out, entry.name, 0o644, entry.data); err != nil {
			return err
		}
	}
	return out.Close()
}

// archiveManifest is one entry of a docker-archive's manifest.json.
type archiveManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// ociConfig is the part of the OCI image config orch writes.
type ociConfig struct {
	Architecture string    `json:"architecture"`
	Variant      string    `json:"variant,omitempty"`
	OS           string    `json:"os"`
	Created      time.Time `json:"created"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint,omitempty"`
		Cmd        []string `json:"Cmd,omitempty"`
		Env        []string `json:"Env,omitempty"`
		WorkingDir string   `json:"WorkingDir,omitempty"`
		User       string   `json:"User,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func imageConfig(cfg Config, layerDigest string) ociConfig {
	var c ociConfig
	c.Architecture, c.Variant, c.OS = cfg.Arch, variant(cfg.Arch), "linux"
	// A fixed creation time keeps the image ID the same from build to build.
	c.Created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Config.Entrypoint, c.Config.Cmd, c.Config.Env = cfg.Entrypoint, cfg.Cmd, cfg.Env
	c.Config.WorkingDir, c.Config.User = cfg.WorkingDir, cfg.User
	c.RootFS.Type = "layers"
	c.RootFS.DiffIDs = []string{"sha256:" + layerDigest}
	return c
}

// layerTar packs files, with the directories they need, sorted by path so
// the same files always give the same digest.
func layerTar(files []File) ([]byte, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	out := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range sorted {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("image file path %q must be absolute and clean", f.Path)
		}
		if err := writeParents(out, path.Dir(f.Path), dirs); err != nil {
			return nil, err
		}
		name := f.Path[1:]
		var err error
		if f.Link != "" {
			err = out.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.Link, Mode: 0o777, ModTime: epoch})
		} else {
			err = writeFile(out, name, f.Mode, f.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// epoch is the modification time of every layer entry.
var epoch = time.Unix(0, 0)

func writeParents(out *tar.Writer, dir string, written map[string]bool) error {
	if dir == "/" || written[dir] {
		return nil
	}
	if err := writeParents(out, path.Dir(dir), written); err != nil {
		return err
	}
	written[dir] = true
	return out.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch})
}

func writeFile(out *tar.Writer, name string, mode int64, data []byte) error {
	if err := out.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := out.Write(data)
	return err
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
