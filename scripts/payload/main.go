// Command payload builds the node runtime orch embeds — runc (static, with
// seccomp), containerd-shim-runc-v2 and the CNI plugins of the pod network
// — for one architecture, from the modules and versions go.mod pins (its
// tool directives), compresses each with zstd and writes them with their
// SHA-256 manifest into internal/kubelet/containerd/payload/files/<arch>.
// `make build` runs it for this machine, `make release` for each target.
//
// runc needs cgo and libseccomp: a C compiler for the target and its
// libseccomp-dev (scripts/test-deps.sh installs them, --release for the
// cross compilers). The rest builds with CGO_ENABLED=0.
//
//	go run ./scripts/payload -arch arm64
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// tools are the payload's programs: the package each is built from, and
// whether it needs cgo (runc: libcontainer's nsenter and seccomp).
var tools = []struct {
	name, pkg string
	cgo       bool
}{
	{"runc", "github.com/opencontainers/runc", true},
	{"containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", false},
	{"bridge", "github.com/containernetworking/plugins/plugins/main/bridge", false},
	{"host-local", "github.com/containernetworking/plugins/plugins/ipam/host-local", false},
	{"loopback", "github.com/containernetworking/plugins/plugins/main/loopback", false},
	{"portmap", "github.com/containernetworking/plugins/plugins/meta/portmap", false},
	{"bandwidth", "github.com/containernetworking/plugins/plugins/meta/bandwidth", false},
	{"firewall", "github.com/containernetworking/plugins/plugins/meta/firewall", false},
}

// crossCC is the C compiler (Debian's cross toolchains) and pkg-config
// directory for runc on each architecture.
var crossCC = map[string][2]string{
	"amd64": {"x86_64-linux-gnu-gcc", "/usr/lib/x86_64-linux-gnu/pkgconfig"},
	"arm64": {"aarch64-linux-gnu-gcc", "/usr/lib/aarch64-linux-gnu/pkgconfig"},
	"arm":   {"arm-linux-gnueabihf-gcc", "/usr/lib/arm-linux-gnueabihf/pkgconfig"},
}

func main() {
	arch := flag.String("arch", runtime.GOARCH, "target architecture: amd64, arm64 or arm (v7)")
	out := flag.String("out", "", "output directory (default internal/kubelet/containerd/payload/files/ARCH)")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join("internal", "kubelet", "containerd", "payload", "files", *arch)
	}
	if err := build(*arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "payload:", err)
		os.Exit(1)
	}
}

func build(arch, out string) error {
	cc, ok := crossCC[arch]
	if !ok {
		return fmt.Errorf("no runtime for %q: orch carries one for amd64, arm64 and arm", arch)
	}
	key, err := buildKey(arch)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(out, "KEY")); err == nil && string(old) == key {
		fmt.Printf("payload: %s is up to date\n", out)
		return nil
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return fmt.Errorf("runc for %s needs the C compiler %s and libseccomp-dev for %s: run `bash scripts/test-deps.sh --release` (as root)", arch, cc[0], arch)
	}
	tmp, err := os.MkdirTemp("", "orch-payload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	containerdVersion, err := moduleVersion("github.com/containerd/containerd/v2")
	if err != nil {
		return err
	}
	for _, t := range tools {
		ldflags := "-s -w"
		env := append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "GOARM=7")
		tags := ""
		if t.cgo {
			ldflags += " -extldflags -static"
			tags = "seccomp netgo osusergo urfave_cli_no_docs"
			env = append(env, "CGO_ENABLED=1", "CC="+cc[0], "PKG_CONFIG_LIBDIR="+cc[1], "PKG_CONFIG_PATH=")
		} else {
			env = append(env, "CGO_ENABLED=0")
		}
		if strings.HasPrefix(t.pkg, "github.com/containerd/") {
			ldflags += " -X github.com/containerd/containerd/v2/version.Version=" + strings.TrimPrefix(containerdVersion, "v")
		}
		cmd := exec.Command("go", "build", "-trimpath", "-tags", tags, "-ldflags", ldflags, "-o", filepath.Join(tmp, t.name), t.pkg)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
		fmt.Printf("payload: building %s for %s\n", t.name, arch)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s for %s: %w", t.pkg, arch, err)
		}
	}
	return write(tmp, out, key)
}

// write compresses each built file into out and writes SHA256SUMS, then
// KEY, last, so that an interrupted run is redone.
func write(built, out, key string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	os.Remove(filepath.Join(out, "KEY"))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		return err
	}
	var sums []string
	for _, t := range tools {
		data, err := os.ReadFile(filepath.Join(built, t.name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+t.name)
		if err := os.WriteFile(filepath.Join(out, t.name+".zst"), enc.EncodeAll(data, nil), 0o644); err != nil {
			return err
		}
	}
	sort.Strings(sums)
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("payload: wrote %s\n", out)
	return os.WriteFile(filepath.Join(out, "KEY"), []byte(key), 0o644)
}

// buildKey changes whenever what the payload is built from may have:
// go.sum (the pinned versions), the Go version, the architecture and this
// program.
func buildKey(arch string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.sum", "scripts/payload/main.go"} {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("%w (run from the repository's root)", err)
		}
		h.Write(data)
	}
	fmt.Fprintf(h, "%s %s", runtime.Version(), arch)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func moduleVersion(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	return string(bytes.TrimSpace(out)), nil
}
