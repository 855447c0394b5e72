package containerd

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestConfigTOMLGolden(t *testing.T) {
	c := NewConfig("/var/lib/orch")
	c.SystemdCgroup, c.RestrictOOMScoreAdj = false, false
	got := c.TOML()
	golden := filepath.Join("testdata", "config.toml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("config.toml differs from %s (go test -update to accept):\n%s", golden, got)
	}
	if c.Address != "/run/orch/containerd/containerd.sock" || c.Root != "/var/lib/orch/agent/containerd" ||
		c.ConfigPath != "/var/lib/orch/agent/etc/containerd/config.toml" || c.CNIConfDir != "/var/lib/orch/agent/etc/cni/net.d" ||
		c.LogPath != "/var/lib/orch/agent/containerd/containerd.log" || c.CertsDir != "/var/lib/orch/agent/etc/containerd/certs.d" {
		t.Errorf("paths %+v", c)
	}
}

// TestContainerdReadsTheConfig has the installed containerd parse the file
// and checks the values it reports back.
func TestContainerdReadsTheConfig(t *testing.T) {
	bin := requireBinary(t, "containerd")
	dir := t.TempDir()
	c := NewConfig(dir).WithState(filepath.Join(dir, "run"))
	c.SystemdCgroup, c.RestrictOOMScoreAdj = true, true
	if err := os.MkdirAll(filepath.Dir(c.ConfigPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.ConfigPath, c.TOML(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", c.ConfigPath, "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	dump := string(out)
	for _, want := range []string{
		`root = "` + c.Root + `"`,
		`address = "` + c.Address + `"`,
		`sandbox_image = "orch.dev/pause:1"`,
		`snapshotter = "overlayfs"`,
		`runtime_type = "io.containerd.runc.v2"`,
		`SystemdCgroup = true`,
		`restrict_oom_score_adj = true`,
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "` + c.CNIConfDir + `"`,
		`config_path = "` + c.CertsDir + `"`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("containerd's view of the config lacks %s:\n%s", want, dump)
		}
	}
}

// requireBinary finds name on PATH or fails the test with how to get it.
func requireBinary(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/test-deps.sh as root (it installs containerd, runc, containernetworking-plugins, busybox-static)", name)
	}
	return path
}
