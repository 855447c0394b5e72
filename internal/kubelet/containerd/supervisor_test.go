package containerd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestSupervisorNamesTheMissingPackage(t *testing.T) {
	dir := t.TempDir()
	cfg := NewConfig(dir).WithState(filepath.Join(dir, "run"))
	cfg.Binary = "orch-test-no-such-containerd"
	err := NewSupervisor(cfg, nil).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "apt-get install containerd") || !strings.Contains(err.Error(), "--container-runtime-endpoint") {
		t.Fatalf("Start without containerd: %v", err)
	}
	cfg = NewConfig(dir).WithState("/" + strings.Repeat("x", 110))
	cfg.Binary = "true" // found on PATH; the socket check comes before any start
	if err := NewSupervisor(cfg, nil).Start(context.Background()); err == nil || !strings.Contains(err.Error(), "shorter than 108") {
		t.Fatalf("Start with a long socket path: %v", err)
	}
}
