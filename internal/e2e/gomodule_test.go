package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goModule downloads mod (path@version) through the module proxy and
// returns its directory in the module cache.
func goModule(t *testing.T, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", mod, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", mod, err, info.Error)
	}
	return info.Dir
}

// goBuild builds the main package pkg (".", or a relative path such as
// "./cmd/helm") of a downloaded module's directory, with the module's own
// go.mod and go.sum, and returns the binary's path, named after the
// package's directory. (`go install path@version` would also ask the proxy
// for the module's version list, which it refuses for some modules.)
func goBuild(t *testing.T, moduleDir, pkg string) string {
	t.Helper()
	modulePath, _, _ := strings.Cut(moduleDir, "@")
	bin := filepath.Join(t.TempDir(), filepath.Base(filepath.Join(modulePath, pkg)))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, moduleDir, err, out)
	}
	return bin
}
