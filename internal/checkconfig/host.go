package checkconfig

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Host is what the checks read: files, the commands on PATH and their
// output. OS is the real machine; tests use a fake.
type Host interface {
	// ReadFile returns the contents of a file (os.ReadFile).
	ReadFile(path string) ([]byte, error)
	// Exists reports whether path exists (a file, directory or link).
	Exists(path string) bool
	// LookPath finds a command on PATH (exec.LookPath).
	LookPath(name string) (string, error)
	// Output runs a command and returns its standard output and error
	// together.
	Output(name string, args ...string) (string, error)
}

// OS is the Host of the machine this process runs on.
type OS struct{}

var _ Host = OS{}

// ReadFile implements Host.
func (OS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// Exists implements Host.
func (OS) Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// LookPath implements Host.
func (OS) LookPath(name string) (string, error) { return exec.LookPath(name) }

// commandTimeout bounds each command a check runs (--version and the like).
const commandTimeout = 10 * time.Second

// Output implements Host.
func (OS) Output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// readTrimmed is ReadFile with the surrounding space removed.
func readTrimmed(h Host, path string) (string, error) {
	b, err := h.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}
