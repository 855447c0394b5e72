package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readArchive returns the files of a tarball by name.
func readArchive(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	r := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = body
	}
}

func TestWriteMakesAConsistentDockerArchive(t *testing.T) {
	var buf bytes.Buffer
	files := []File{
		{Path: "/bin/busybox", Mode: 0o755, Data: []byte("not really busybox")},
		{Path: "/bin/sh", Link: "busybox"},
	}
	if err := Write(&buf, "example.test/box:1", files, Config{Arch: "amd64", Cmd: []string{"sh"}}); err != nil {
		t.Fatal(err)
	}
	archive := readArchive(t, buf.Bytes())
	var manifest []archiveManifest
	if err := json.Unmarshal(archive["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != "example.test/box:1" || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest %+v", manifest)
	}
	var config ociConfig
	if err := json.Unmarshal(archive[manifest[0].Config], &config); err != nil {
		t.Fatalf("config %s: %v", manifest[0].Config, err)
	}
	layer := archive[manifest[0].Layers[0]]
	sum := sha256.Sum256(layer)
	if want := "sha256:" + hex.EncodeToString(sum[:]); len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != want {
		t.Errorf("config diff IDs %v, want [%s]", config.RootFS.DiffIDs, want)
	}
	if config.Architecture != "amd64" || config.OS != "linux" || len(config.Config.Cmd) != 1 {
		t.Errorf("config %+v", config)
	}
	entries := map[string]*tar.Header{}
	r := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := r.Next()
		if err != nil {
			break
		}
		entries[h.Name] = h
	}
	if h := entries["bin/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("layer has no bin/ directory: %v", entries)
	}
	if h := entries["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
		t.Errorf("layer bin/sh is not a link to busybox: %+v", h)
	}

	var again bytes.Buffer
	if err := Write(&again, "example.test/box:1", []File{files[1], files[0]}, Config{Arch: "amd64", Cmd: []string{"sh"}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("the same files in another order give another archive")
	}
}

func TestWriteRefusesRelativePaths(t *testing.T) {
	for _, p := range []string{"bin/sh", "/bin/../sh", "/"} {
		if err := Write(io.Discard, "x:1", []File{{Path: p}}, Config{}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

// TestPauseRunsUntilKilled runs the built-in pause program of each
// architecture, the foreign one under qemu user emulation: it must not
// crash (a bad ELF or bad code dies at once) and must still be sleeping
// when it is killed.
func TestPauseRunsUntilKilled(t *testing.T) {
	for _, arch := range PauseArchs {
		t.Run(arch, func(t *testing.T) { runPause(t, arch) })
	}
	if _, err := pauseProgram("s390x"); err == nil {
		t.Error("a pause program for s390x, which orch has none for")
	}
	var image bytes.Buffer
	if err := WritePause(&image); err != nil {
		t.Fatal(err)
	}
	if len(image.Bytes()) > 32<<10 {
		t.Errorf("the pause image is %d bytes; it should be tens of KiB (tar blocks) at most", image.Len())
	}
}

// qemu names the user-mode emulator of each architecture.
// fileArch is what file(1) says of an executable of each architecture.
var fileArch = map[string]string{"amd64": "x86-64", "arm64": "ARM aarch64", "arm": "ARM, EABI5"}

var qemu = map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static", "arm": "qemu-arm-static"}

func runPause(t *testing.T, arch string) {
	program, err := pauseProgram(arch)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, program, 0o755); err != nil {
		t.Fatal(err)
	}
	// file(1) agrees on the architecture.
	out, err := exec.Command("file", "-b", bin).Output()
	if err != nil {
		t.Fatalf("file %s: %v (scripts/test-deps.sh installs file)", bin, err)
	}
	if want := fileArch[arch]; !strings.Contains(string(out), want) || !strings.Contains(string(out), "statically linked") {
		t.Errorf("file says the %s pause program is %q, want %q, statically linked", arch, out, want)
	}
	cmd := exec.Command(bin)
	if arch != runtime.GOARCH {
		emulator, err := exec.LookPath(qemu[arch])
		if err != nil {
			t.Fatalf("%s runs the %s pause program here: install qemu-user-static (scripts/test-deps.sh does): %v", qemu[arch], arch, err)
		}
		cmd = exec.Command(emulator, bin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("pause exited on its own: %v %s", err, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Kill()
	if err := <-exited; err == nil || err.Error() != "signal: killed" {
		t.Fatalf("pause ended with %v, want killed", err)
	}
}
