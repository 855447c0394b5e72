package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orch/internal/version"
)

// orchBin is the orch binary under test: $ORCH_BIN, or one TestMain builds.
var orchBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	orchBin = os.Getenv("ORCH_BIN")
	if orchBin == "" {
		dir, err := os.MkdirTemp("", "orch-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if orchBin, err = buildOrch(dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	if _, err := os.Stat(orchBin); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: ORCH_BIN=%s: %v (run `make build` first)\n", orchBin, err)
		return 1
	}
	return m.Run()
}

// buildOrch builds orch from the repository root into dir, with the same
// version stamps the Makefile sets (without them kubectl reports
// v0.0.0-master and `kubectl version` cannot parse it).
func buildOrch(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	info := version.Info()
	var ldflags []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags = append(ldflags,
			"-X", p+".gitVersion="+version.GitVersion(),
			"-X", p+".gitMajor="+info.Major, "-X", p+".gitMinor="+info.Minor, "-X", p+".gitTreeState=clean")
	}
	bin := filepath.Join(dir, "orch")
	fmt.Fprintln(os.Stderr, "e2e: ORCH_BIN is not set; building orch (this takes a while)")
	cmd := exec.Command("go", "build", "-ldflags", strings.Join(ldflags, " "), "-o", bin, ".")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build orch in %s: %w", root, err)
	}
	return bin, nil
}

// repoRoot is the nearest directory above the working directory with a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
