package containerd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestSupervisorNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	cfg := NewConfig(dir).WithState(filepath.Join(dir, "run"))
	cfg.Binary = filepath.Join(dir, "no-such-orch")
	err := NewSupervisor(cfg, nil).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no-such-orch") {
		t.Fatalf("Start without its executable: %v", err)
	}
	cfg = NewConfig(dir).WithState("/" + strings.Repeat("x", 110))
	cfg.Binary = "/bin/true" // the socket check comes before any start
	if err := NewSupervisor(cfg, nil).Start(context.Background()); err == nil || !strings.Contains(err.Error(), "shorter than 108") {
		t.Fatalf("Start with a long socket path: %v", err)
	}
}
