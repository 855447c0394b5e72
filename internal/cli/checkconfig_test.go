package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"orch/internal/kubelet/containerd/daemon"
	"orch/internal/kubelet/containerd/payload"
)

// runCheckConfig runs `orch check-config args...` and returns its report
// and exit code.
func runCheckConfig(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	app := &cli.App{Name: "orch", Commands: []*cli.Command{checkConfigCommand()}, Writer: &out,
		ExitErrHandler: func(*cli.Context, error) {}} // Main maps the error to the code; do not os.Exit
	err := app.Run(append([]string{"orch", "check-config"}, args...))
	if err == nil {
		return out.String(), 0
	}
	var exit cli.ExitCoder
	if !errors.As(err, &exit) {
		t.Fatalf("check-config returned %v, want nil or a cli.Exit", err)
	}
	if !strings.Contains(exit.Error(), "apply the fix under each") {
		t.Errorf("exit message %q does not say what to do", exit.Error())
	}
	return out.String(), exit.ExitCode()
}

func TestCheckConfigMissingKernelConfigExits1(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "config-none")
	out, code := runCheckConfig(t, "--kernel-config", missing)
	if code != 1 {
		t.Errorf("exit code %d, want 1 for an unreadable --kernel-config; report:\n%s", code, out)
	}
	for _, s := range []string{"missing  kernel config", "cannot read " + missing, "fix: give --kernel-config a readable kernel config", " missing: orch cannot run"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

func TestCheckConfigReadsGivenKernelConfig(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(config, []byte("CONFIG_NAMESPACES=y\n# CONFIG_VETH is not set\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCheckConfig(t, "--kernel-config", config)
	if code != 1 {
		t.Errorf("exit code %d, want 1 for a kernel without CONFIG_VETH; report:\n%s", code, out)
	}
	for _, s := range []string{"ok       kernel config", "read " + config, "ok       CONFIG_NAMESPACES", "missing  CONFIG_VETH", "not set"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

func TestCheckConfigReportsCarriedRuntime(t *testing.T) {
	// make build embeds the payload before the tests run: without it the
	// test fails rather than expecting "missing".
	if _, err := payload.Manifest(); err != nil {
		t.Fatal(err)
	}
	out, _ := runCheckConfig(t)
	want := "ok       node runtime"
	for _, s := range []string{want, "containerd " + daemon.Version() + " built in"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	for _, line := range strings.Split(out, "\n") { // "status   name  found": the host provides none of these now
		for _, gone := range []string{"containerd ", "runc ", "CNI plugins "} {
			if len(line) > 9 && strings.HasPrefix(line[9:], gone) {
				t.Errorf("report still checks the host for %s: %q", gone, line)
			}
		}
	}
}
