package pki

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func testConfig(dir string) Config {
	_, cidr, _ := net.ParseCIDR("10.43.0.0/16")
	return Config{
		Dir:           dir,
		Hostname:      "Node-1",
		NodeIPs:       []net.IP{net.ParseIP("192.168.1.10"), net.ParseIP("fd00::10")},
		ExtraSANs:     []string{"api.example.com", "203.0.113.7"},
		ServiceCIDR:   cidr,
		ClusterDomain: "cluster.local",
	}
}

func mustEnsure(t *testing.T, cfg Config) *Bundle {
	t.Helper()
	b, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b
}

func TestEnsureCreatesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server", "tls")
	b := mustEnsure(t, testConfig(dir))

	modes := map[string]fs.FileMode{
		CACertFile: 0o644, CAKeyFile: 0o600,
		ServingCertFile: 0o644, ServingKeyFile: 0o600,
		AdminCertFile: 0o644, AdminKeyFile: 0o600,
	}
	for name, want := range modes {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("stat %s: %v", name, err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %o, want %o", name, got, want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v (err %v), want 0700", fi.Mode().Perm(), err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(dir, CACertFile))
	if string(onDisk) != string(b.CACertPEM) {
		t.Errorf("CACertPEM differs from %s on disk", CACertFile)
	}

	if !b.CA.IsCA || !strings.HasPrefix(b.CA.Subject.CommonName, "orch-ca@") {
		t.Errorf("CA subject %q IsCA %v", b.CA.Subject.CommonName, b.CA.IsCA)
	}
	if d := b.CA.NotAfter.Sub(time.Now()); d < CAValidity-2*time.Hour {
		t.Errorf("CA valid for %v, want about 10 years", d)
	}
	if d := b.Serving.NotAfter.Sub(time.Now()); d < LeafValidity-2*time.Hour || d > LeafValidity {
		t.Errorf("serving cert valid for %v, want about one year", d)
	}
	if b.Admin.Subject.CommonName != AdminUser || !slices.Equal(b.Admin.Subject.Organization, []string{AdminGroup}) {
		t.Errorf("admin subject = %v", b.Admin.Subject)
	}
	if !slices.Contains(b.Admin.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("admin cert lacks client auth usage")
	}
	if _, err := b.ServingCertificate(); err != nil {
		t.Errorf("ServingCertificate: %v", err)
	}
}

func TestServingSANs(t *testing.T) {
	b := mustEnsure(t, testConfig(t.TempDir()))
	for _, name := range []string{
		"node-1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", "api.example.com",
		"127.0.0.1", "192.168.1.10", "fd00::10", "10.43.0.1", "203.0.113.7",
	} {
		t.Run(name, func(t *testing.T) {
			if err := b.Serving.VerifyHostname(name); err != nil {
				t.Errorf("serving cert does not cover %q: %v", name, err)
			}
		})
	}
	opts := x509.VerifyOptions{Roots: b.CAPool(), DNSName: "kubernetes.default.svc"}
	if _, err := b.Serving.Verify(opts); err != nil {
		t.Errorf("serving cert does not verify against the CA: %v", err)
	}
}

func TestEnsureReusesOrRenews(t *testing.T) {
	later := func(d time.Duration) func() time.Time {
		return func() time.Time { return time.Now().Add(d) }
	}
	tests := []struct {
		name        string
		change      func(t *testing.T, cfg *Config)
		sameCA      bool
		sameServing bool
		sameAdmin   bool
	}{
		{
			name:   "second start reuses everything",
			change: func(*testing.T, *Config) {}, sameCA: true, sameServing: true, sameAdmin: true,
		},
		{
			name:   "dropped tls-san keeps the certificate",
			change: func(_ *testing.T, c *Config) { c.ExtraSANs = nil }, sameCA: true, sameServing: true, sameAdmin: true,
		},
		{
			name: "new tls-san renews serving cert",
			change: func(_ *testing.T, c *Config) {
				c.ExtraSANs = append(c.ExtraSANs, "new.example.com")
			},
			sameCA: true, sameAdmin: true,
		},
		{
			name:   "new node IP renews serving cert",
			change: func(_ *testing.T, c *Config) { c.NodeIPs = append(c.NodeIPs, net.ParseIP("10.0.0.9")) },
			sameCA: true, sameAdmin: true,
		},
		{
			name:   "expiring within 90 days renews leaves",
			change: func(_ *testing.T, c *Config) { c.Now = later(300 * 24 * time.Hour) },
			sameCA: true,
		},
		{
			name:   "91 days before expiry keeps leaves",
			change: func(_ *testing.T, c *Config) { c.Now = later(LeafValidity - RenewBefore - 24*time.Hour) },
			sameCA: true, sameServing: true, sameAdmin: true,
		},
		{
			name: "new CA renews leaves it did not sign",
			change: func(t *testing.T, c *Config) {
				for _, f := range []string{CACertFile, CAKeyFile} {
					if err := os.Remove(filepath.Join(c.Dir, f)); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			name: "corrupt serving cert is replaced",
			change: func(t *testing.T, c *Config) {
				writeTestFile(t, filepath.Join(c.Dir, ServingCertFile), "garbage")
			},
			sameCA: true, sameAdmin: true,
		},
		{
			name: "mismatched admin key is replaced",
			change: func(t *testing.T, c *Config) {
				key, _ := os.ReadFile(filepath.Join(c.Dir, ServingKeyFile))
				writeTestFile(t, filepath.Join(c.Dir, AdminKeyFile), string(key))
			},
			sameCA: true, sameServing: true,
		},
		{
			name: "key without CA cert (interrupted first start) makes a new CA",
			change: func(t *testing.T, c *Config) {
				if err := os.Remove(filepath.Join(c.Dir, CACertFile)); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			first := mustEnsure(t, cfg)
			tt.change(t, &cfg)
			second := mustEnsure(t, cfg)

			check := func(what string, a, b *x509.Certificate, wantSame bool) {
				t.Helper()
				if same := a.SerialNumber.Cmp(b.SerialNumber) == 0; same != wantSame {
					t.Errorf("%s: same serial = %v, want %v", what, same, wantSame)
				}
			}
			check("CA", first.CA, second.CA, tt.sameCA)
			check("serving", first.Serving, second.Serving, tt.sameServing)
			check("admin", first.Admin, second.Admin, tt.sameAdmin)

			// Whatever happened, what is on disk now fits the new config.
			if err := second.Serving.CheckSignatureFrom(second.CA); err != nil {
				t.Errorf("serving cert not signed by CA: %v", err)
			}
			sans, err := wantedSANs(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !coversSANs(second.Serving, sans.dnsNames, sans.ips) {
				t.Errorf("serving cert SANs %v %v do not cover %v %v",
					second.Serving.DNSNames, second.Serving.IPAddresses, sans.dnsNames, sans.ips)
			}
			third := mustEnsure(t, cfg)
			if third.Serving.SerialNumber.Cmp(second.Serving.SerialNumber) != 0 {
				t.Errorf("a third start renewed the serving cert again")
			}
		})
	}
}

func TestEnsureErrors(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, cfg *Config)
		substr string
	}{
		{
			name:   "no dir",
			setup:  func(_ *testing.T, c *Config) { c.Dir = "" },
			substr: "no certificate directory",
		},
		{
			name:   "bad tls-san",
			setup:  func(_ *testing.T, c *Config) { c.ExtraSANs = []string{"not a name"} },
			substr: `--tls-san "not a name" is neither`,
		},
		{
			name: "CA key lost",
			setup: func(t *testing.T, c *Config) {
				mustEnsure(t, *c)
				os.Remove(filepath.Join(c.Dir, CAKeyFile))
			},
			substr: "restore the key from a backup",
		},
		{
			name: "CA key of another CA",
			setup: func(t *testing.T, c *Config) {
				other := mustEnsure(t, testConfig(t.TempDir()))
				mustEnsure(t, *c)
				writeTestFile(t, filepath.Join(c.Dir, CAKeyFile), string(other.CAKeyPEM))
			},
			substr: "does not belong to certificate",
		},
		{
			name: "CA expired",
			setup: func(t *testing.T, c *Config) {
				mustEnsure(t, *c)
				c.Now = func() time.Time { return time.Now().Add(CAValidity + time.Hour) }
			},
			substr: "expired on",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			tt.setup(t, &cfg)
			_, err := Ensure(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("Ensure error = %v, want one containing %q", err, tt.substr)
			}
		})
	}
}

func TestIssueClientCert(t *testing.T) {
	b := mustEnsure(t, testConfig(t.TempDir()))
	certPEM, keyPEM, err := b.IssueClientCert("system:node:node-2", []string{"system:nodes"}, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil || !keyMatches(key, cert) {
		t.Fatalf("key does not match cert (err %v)", err)
	}
	if cert.Subject.CommonName != "system:node:node-2" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject = %v", cert.Subject)
	}
	if d := cert.NotAfter.Sub(time.Now()); d > 48*time.Hour || d < 47*time.Hour {
		t.Errorf("valid for %v, want 48h", d)
	}
	opts := x509.VerifyOptions{Roots: b.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("client cert does not verify: %v", err)
	}

	long, _, err := b.IssueClientCert("u", nil, 2*CAValidity)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := parseCertPEM(long); c.NotAfter.After(b.CA.NotAfter) {
		t.Errorf("client cert outlives the CA: %v > %v", c.NotAfter, b.CA.NotAfter)
	}
	for _, bad := range []struct {
		cn string
		d  time.Duration
	}{{"", time.Hour}, {"u", 0}, {"u", -time.Hour}} {
		if _, _, err := b.IssueClientCert(bad.cn, nil, bad.d); err == nil {
			t.Errorf("IssueClientCert(%q, %v) succeeded, want error", bad.cn, bad.d)
		}
	}
	if _, _, err := (&Bundle{}).IssueClientCert("u", nil, time.Hour); err == nil {
		t.Errorf("IssueClientCert on an empty bundle succeeded")
	}
}

func TestLoadCAPool(t *testing.T) {
	dir := t.TempDir()
	b := mustEnsure(t, testConfig(dir))
	pool, err := LoadCAPool(b.Path(CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert does not verify against loaded pool: %v", err)
	}
	if _, err := LoadCAPool(filepath.Join(dir, "missing.crt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	if _, err := LoadCAPool(b.Path(CAKeyFile)); err == nil || !strings.Contains(err.Error(), "no PEM CERTIFICATE") {
		t.Errorf("key file as CA: err = %v", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
