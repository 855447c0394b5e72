package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEnsureKernelTunables(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	write := func(name, value string) {
		path := filepath.Join(dir, strings.ReplaceAll(name, ".", "/"))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(name, ".", "/")))
		return strings.TrimSpace(string(data))
	}
	for _, tt := range kernelTunables {
		write(tt.name, "0")
	}
	write("kernel.panic", "10")

	err := ensureKernelTunables(dir, true, log)
	if err == nil || !strings.Contains(err.Error(), "vm.overcommit_memory is 0, want 1") || strings.Contains(err.Error(), "kernel.panic is") {
		t.Errorf("protect: %v", err)
	}
	if read("vm.overcommit_memory") != "0" {
		t.Error("protect changed a tunable")
	}
	if err := ensureKernelTunables(dir, false, log); err != nil {
		t.Fatal(err)
	}
	for _, tt := range kernelTunables {
		if got := read(tt.name); got != strconv.Itoa(tt.want) {
			t.Errorf("%s = %s, want %d", tt.name, got, tt.want)
		}
	}
	if err := ensureKernelTunables(dir, true, log); err != nil {
		t.Errorf("protect once they are set: %v", err)
	}
}
