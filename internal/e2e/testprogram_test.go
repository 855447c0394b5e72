package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"orch/internal/kubelet/images"
)

// testProgram is a program of internal/e2e/testdata built for an image,
// or why it could not be.
type testProgram struct {
	name, bin string
	err       error
}

// buildTestProgram builds internal/e2e/testdata/name, static, into dir
// (offline: its modules are orch's).
func buildTestProgram(dir, name string) testProgram {
	root, err := repoRoot()
	if err != nil {
		return testProgram{name: name, err: err}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command(goBin, "build", "-o", bin, "./internal/e2e/testdata/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return testProgram{name: name, err: fmt.Errorf("go build ./internal/e2e/testdata/%s: %v\n%s", name, err, out)}
	}
	return testProgram{name: name, bin: bin}
}

// writeProgramImage writes image ref, the program as its entrypoint
// /NAME, to the archive path through a rename (the agent imports the
// images of its directory when they appear).
func writeProgramImage(p testProgram, ref, path string) error {
	if p.err != nil {
		return p.err
	}
	data, err := os.ReadFile(p.bin)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+p.name+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	entry := "/" + p.name
	if err := images.Write(f, ref, []images.File{{Path: entry, Mode: 0o755, Data: data}},
		images.Config{Arch: runtime.GOARCH, Entrypoint: []string{entry}}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
