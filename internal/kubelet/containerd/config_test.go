package containerd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orch/internal/goldentest"
)

func TestConfigTOMLGolden(t *testing.T) {
	c := NewConfig("/var/lib/orch")
	c.SystemdCgroup, c.RestrictOOMScoreAdj = false, false
	got := c.TOML()
	goldentest.Check(t, filepath.Join("testdata", "config.toml"), got)
	if c.Address != "/run/orch/containerd/containerd.sock" || c.Root != "/var/lib/orch/agent/containerd" ||
		c.ConfigPath != "/var/lib/orch/agent/etc/containerd/config.toml" || c.CNIConfDir != "/var/lib/orch/agent/etc/cni/net.d" ||
		c.LogPath != "/var/lib/orch/agent/containerd/containerd.log" || c.CertsDir != "/var/lib/orch/agent/etc/containerd/certs.d" {
		t.Errorf("paths %+v", c)
	}
}

// TestContainerdReadsTheConfig has orch's containerd parse the file and
// checks the values it reports back.
func TestContainerdReadsTheConfig(t *testing.T) {
	bin := os.Getenv("ORCH_BIN")
	if bin == "" {
		t.Fatal("ORCH_BIN is not set: the test runs `orch containerd config dump`; run `make build` and set ORCH_BIN=$PWD/bin/orch (make test does)")
	}
	dir := t.TempDir()
	c := NewConfig(dir).WithState(filepath.Join(dir, "run"))
	c.SystemdCgroup, c.RestrictOOMScoreAdj = true, true
	if err := os.MkdirAll(filepath.Dir(c.ConfigPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ConfigPath, c.TOML(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "containerd", "--config", c.ConfigPath, "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("orch containerd config dump: %v\n%s", err, out)
	}
	dump := string(out)
	for _, want := range []string{
		`root = '` + c.Root + `'`,
		`address = '` + c.Address + `'`,
		`sandbox = 'orch.dev/pause:1'`,
		`snapshotter = 'overlayfs'`,
		`runtime_type = 'io.containerd.runc.v2'`,
		`runtime_path = '` + filepath.Join(dir, "agent", "runtime", "current", "bin", "containerd-shim-runc-v2") + `'`,
		`BinaryName = '` + filepath.Join(dir, "agent", "runtime", "current", "bin", "runc") + `'`,
		`SystemdCgroup = true`,
		`restrict_oom_score_adj = true`,
		`bin_dirs = ['` + filepath.Join(dir, "agent", "runtime", "current", "bin") + `']`,
		`conf_dir = '` + c.CNIConfDir + `'`,
		`config_path = '` + c.CertsDir + `'`,
		`address = '` + c.Address + `.ttrpc'`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("containerd's view of the config lacks %s:\n%s", want, dump)
		}
	}
	// NRI is off: its socket would be the host containerd's.
	if i := strings.Index(dump, "io.containerd.nri.v1.nri"); i < 0 || !strings.Contains(dump[i:], "disable = true") {
		t.Errorf("NRI is not disabled:\n%s", dump)
	}
}
