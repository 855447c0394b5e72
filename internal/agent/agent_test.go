package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orch/internal/kubelet/containerd"
	"orch/internal/network"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("K10abc::server:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
		check   func(t *testing.T, c checked)
	}{
		{name: "no server", cfg: Config{Token: "t"},
			wantErr: "orch agent: --server is required (the URL of an orch server, e.g. https://10.0.0.1:6443)"},
		{name: "no token", cfg: Config{Server: "https://x:6443"}, wantErr: "--token or --token-file is required"},
		{name: "missing token file", cfg: Config{Server: "https://x:6443", TokenFile: filepath.Join(dir, "none")}, wantErr: "--token-file"},
		{name: "unknown proxy mode", cfg: Config{Server: "https://x:6443", Token: "t", ProxyMode: "ipvs"}, wantErr: `--proxy-mode "ipvs" is not one of iptables or nftables`},
		{name: "bad ingress port", cfg: Config{Server: "https://x:6443", Token: "t", IngressHTTPSPort: 70000}, wantErr: "--ingress-https-port 70000 is not a port number"},
		{name: "bad node ip", cfg: Config{Server: "https://x:6443", Token: "t", NodeIPs: []string{"10.0.0.300"}}, wantErr: `--node-ip "10.0.0.300"`},
		{name: "token file, defaults", cfg: Config{Server: "https://x:6443", TokenFile: tokenFile, NodeName: "Worker-A"},
			check: func(t *testing.T, c checked) {
				if c.Token != "K10abc::server:secret" {
					t.Errorf("token = %q, want the file's, trimmed", c.Token)
				}
				if c.NodeName != "worker-a" {
					t.Errorf("node name = %q, want lowercased", c.NodeName)
				}
				if c.DataDir != DefaultDataDir {
					t.Errorf("data dir = %q", c.DataDir)
				}
				if len(c.ips) != 1 || !c.ips[0].Equal(network.HostIP()) {
					t.Errorf("ips = %v, want the host's address", c.ips)
				}
			}},
		{name: "--token wins over --token-file", cfg: Config{Server: "https://x:6443", Token: " given ", TokenFile: tokenFile, NodeIPs: []string{"192.0.2.1", "fd00::1"}},
			check: func(t *testing.T, c checked) {
				if c.Token != "given" {
					t.Errorf("token = %q", c.Token)
				}
				if len(c.ips) != 2 || c.ips[1].String() != "fd00::1" {
					t.Errorf("ips = %v", c.ips)
				}
				host, _ := os.Hostname()
				if c.NodeName != strings.ToLower(host) {
					t.Errorf("node name = %q, want the hostname lowercased", c.NodeName)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.cfg.check()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("check = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestContainerdState(t *testing.T) {
	if got := ContainerdState("/var/lib/orch/"); got != containerd.DefaultState {
		t.Errorf("default data dir: %q, want %q", got, containerd.DefaultState)
	}
	a, b := ContainerdState("/tmp/a"), ContainerdState("/tmp/b")
	if a == b || a == containerd.DefaultState {
		t.Errorf("data dirs /tmp/a and /tmp/b share %q", a)
	}
	long := ContainerdState("/" + strings.Repeat("x", 300))
	if sock := filepath.Join(long, "containerd.sock"); len(sock) >= 108 {
		t.Errorf("socket path %q is too long for a unix socket", sock)
	}
	if ContainerdState("/tmp/a") != a {
		t.Error("not stable")
	}
}
