// Package payload is the node runtime orch carries: runc, the shim
// containerd starts for each pod (containerd-shim-runc-v2) and the CNI
// plugins of the pod network, built at the versions go.mod pins by
// scripts/payload (make build) and embedded zstd-compressed in the binary.
//
// Install writes them once per payload under the agent's data dir
// (data-dir/agent/runtime/<id>/bin), checks every file's SHA-256 at each
// start (rewriting one that differs), and points data-dir/agent/runtime/
// current at the payload of the running binary. The containerd config
// names files through current, so an upgraded orch uses its own runc and
// shim for new pods while running containers keep theirs.
package payload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/klauspost/compress/zstd"

	"orch/internal/fsutil"
)

// Sums is the manifest scripts/payload writes next to the compressed
// files: "<sha256 of the file>  <name>" per line, as sha256sum prints.
const Sums = "SHA256SUMS"

// Current is the link, in the install dir, to the running binary's payload.
const Current = "current"

// ErrMissing means this orch was built without its runtime payload.
var ErrMissing = errors.New("this orch binary carries no node runtime (runc, the shim, the CNI plugins): build it with `make build`, which runs scripts/payload, or pass --container-runtime-endpoint with the socket of a CRI runtime you run yourself")

// File is one executable of the payload.
type File struct {
	Name string
	Sum  string // hex SHA-256 of the uncompressed file
}

// embedded is the payload this binary carries.
func embedded() fs.FS {
	sub, err := fs.Sub(files, filesDir)
	if err != nil {
		return files // an empty one: filesDir is a valid path
	}
	return sub
}

// Manifest lists the payload's files; ErrMissing when there is none.
func Manifest() ([]File, error) {
	files, _, err := manifest(embedded())
	return files, err
}

// manifest reads the payload's files and its ID: the first 16 hex digits
// of its manifest's SHA-256.
func manifest(fsys fs.FS) (files []File, id string, err error) {
	data, err := fs.ReadFile(fsys, Sums)
	if err != nil {
		return nil, "", ErrMissing
	}
	files, err = parseSums(data)
	sum := sha256.Sum256(data)
	return files, hex.EncodeToString(sum[:8]), err
}

func parseSums(data []byte) ([]File, error) {
	var out []File
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("payload: bad %s line %q", Sums, sc.Text())
		}
		out = append(out, File{Name: name, Sum: sum})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("payload: %s is empty", Sums)
	}
	return out, sc.Err()
}

// ID names the payload: the first 16 hex digits of its manifest's SHA-256.
func ID() (string, error) {
	_, id, err := manifest(embedded())
	return id, err
}

// Install writes the payload under dir (data-dir/agent/runtime) if it is
// not there or not intact, points dir/current at it, removes the payloads
// of other versions, and returns dir/current/bin, the directory runc, the
// shim and the CNI plugins are in. It reports the files it (re)wrote.
func Install(dir string) (bin string, wrote []string, err error) {
	return install(embedded(), dir)
}

func install(fsys fs.FS, dir string) (bin string, wrote []string, err error) {
	files, version, err := manifest(fsys)
	if err != nil {
		return "", nil, err
	}
	binDir := filepath.Join(dir, version, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", nil, fmt.Errorf("payload: %w", err)
	}
	for _, f := range files {
		target := filepath.Join(binDir, f.Name)
		if ok, err := intact(target, f.Sum); err != nil {
			return "", nil, err
		} else if ok {
			continue
		}
		if err := extract(fsys, f, target); err != nil {
			return "", nil, err
		}
		wrote = append(wrote, f.Name)
	}
	if err := fsutil.SymlinkAtomic(version, filepath.Join(dir, Current)); err != nil {
		return "", nil, fmt.Errorf("payload: %w", err)
	}
	removeOthers(dir, version)
	if len(wrote) > 0 {
		debug.FreeOSMemory() // the decoders' buffers: tens of MiB, needed once
	}
	return filepath.Join(dir, Current, "bin"), wrote, nil
}

// intact reports whether path exists with the SHA-256 sum.
func intact(path, sum string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("payload: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("payload: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)) == sum, nil
}

// extract decompresses f to target through a temporary file, checking its
// sum before the rename, so that target is never a partial file.
func extract(fsys fs.FS, f File, target string) error {
	src, err := fsys.Open(f.Name + ".zst")
	if err != nil {
		return fmt.Errorf("payload: %s is in %s but not in the binary: %w", f.Name, Sums, err)
	}
	defer src.Close()
	// One goroutine and small buffers: the agent should not keep the
	// memory a fast decoder takes once the runtime is written.
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return fmt.Errorf("payload: %s: %w", f.Name, err)
	}
	defer dec.Close()
	tmp := target + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), dec)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && hex.EncodeToString(h.Sum(nil)) != f.Sum {
		err = fmt.Errorf("its SHA-256 is %x, the manifest says %s", h.Sum(nil), f.Sum)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("payload: write %s: %w", target, err)
	}
	return os.Rename(tmp, target)
}

// removeOthers deletes the payloads of other versions. A running shim of
// an older one keeps its executable (the kernel holds it); what it runs
// next (runc) it finds through current.
func removeOthers(dir, id string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != id {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
