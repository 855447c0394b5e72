package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runWithConfig runs the server's flags and config loading with args and
// returns the values the command would see.
func runWithConfig(t *testing.T, args ...string) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	app := &cli.App{Commands: []*cli.Command{{
		Name: "server", Flags: serverFlags(), Before: loadConfigFile,
		Action: func(c *cli.Context) error {
			for _, name := range []string{"data-dir", "https-listen-port", "disable-agent", "write-kubeconfig-mode"} {
				got[name] = c.String(name)
			}
			got["tls-san"] = strings.Join(c.StringSlice("tls-san"), ",")
			return nil
		},
	}}}
	err := app.Run(append([]string{"orch", "server"}, args...))
	return got, err
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	writeFile(t, config, "data-dir: /srv/orch\nhttps-listen-port: 7443\ntls-san: [a.example, 192.0.2.1]\ndisable-agent: true\nwrite-kubeconfig-mode: \"0644\"\n")
	writeFile(t, config+".d/10-port.yaml", "https-listen-port: 8443\n")

	got, err := runWithConfig(t, "--config", config)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"data-dir": "/srv/orch", "https-listen-port": "8443", "disable-agent": "true", "tls-san": "a.example,192.0.2.1", "write-kubeconfig-mode": "0644"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (file, then drop-in)", k, got[k], v)
		}
	}

	got, err = runWithConfig(t, "--config", config, "--data-dir", "/cmdline", "--https-listen-port", "9443")
	if err != nil {
		t.Fatal(err)
	}
	if got["data-dir"] != "/cmdline" || got["https-listen-port"] != "9443" {
		t.Errorf("command line did not win: %v", got)
	}
}

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	writeFile(t, unknown, "data-dir: /x\nno-such-flag: 1\n")
	if _, err := runWithConfig(t, "--config", unknown); err == nil || !strings.Contains(err.Error(), `"no-such-flag"`) {
		t.Errorf("unknown key: %v, want an error naming no-such-flag", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "data-dir: [unclosed\n")
	if _, err := runWithConfig(t, "--config", bad); err == nil || !strings.Contains(err.Error(), "not valid YAML") {
		t.Errorf("bad YAML: %v", err)
	}
	if _, err := runWithConfig(t, "--config", filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("an explicit --config that does not exist must be an error")
	}
	// The default path may be absent: that is no error.
	if _, statErr := os.Stat(defaultConfigFile); os.IsNotExist(statErr) {
		if _, err := runWithConfig(t); err != nil {
			t.Errorf("no config file at the default path: %v, want no error", err)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, ok := range map[string]bool{"0600": true, "644": true, "0999": false, "rw": false, "1777": false} {
		if _, err := parseMode(in); (err == nil) != ok {
			t.Errorf("parseMode(%q) err=%v, want ok=%v", in, err, ok)
		}
	}
}
