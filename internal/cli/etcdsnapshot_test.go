package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"go.etcd.io/etcd/client/pkg/v3/transport"

	"orch/internal/envtest"
	"orch/internal/etcdsnapshot"
	"orch/internal/pki"
	"orch/internal/storage"
)

// runSnapshot runs `orch etcd-snapshot args...` and returns its output and
// error (nil, or the cli.Exit message).
func runSnapshot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	app := &cli.App{Name: "orch", Commands: []*cli.Command{etcdSnapshotCommand()}, Writer: &out,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"orch", "etcd-snapshot"}, args...))
	if err != nil {
		var exit cli.ExitCoder
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("etcd-snapshot %v returned %v, want a cli.Exit with code 1", args, err)
		}
	}
	return out.String(), err
}

// emptyConfig is a config file with no keys, so that the host's
// /etc/orch/config.yaml cannot steer a test.
func emptyConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "")
	return path
}

func TestEtcdSnapshotSaveLsDeletePrune(t *testing.T) {
	addr := envtest.FreeAddr(t)
	e, err := storage.StartEtcd(storage.EtcdConfig{Dir: t.TempDir(), Name: "orch", UnsafeNoFsync: true,
		ClientURL: "http://" + addr, PeerURL: "http://" + envtest.FreeAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	dataDir := t.TempDir()
	common := []string{"--config", emptyConfig(t), "--data-dir", dataDir, "--node-name", "Node1"}
	with := func(args ...string) []string { return append(append(args[:1:1], common...), args[1:]...) }

	out, err := runSnapshot(t, with("save", "--etcd-endpoint", "http://"+addr, "--name", "first")...)
	if err != nil {
		t.Fatal(err)
	}
	dir := etcdsnapshot.DefaultDir(dataDir)
	list, _ := etcdsnapshot.List(dir)
	if len(list) != 1 || !strings.HasPrefix(list[0].Name, "first-node1-") || !strings.Contains(out, list[0].Path) {
		t.Fatalf("after save (%q): snapshots %+v, want one first-node1-*.db", out, list)
	}
	if err := etcdsnapshot.Verify(list[0].Path); err != nil {
		t.Errorf("the saved snapshot does not verify: %v", err)
	}

	out, err = runSnapshot(t, with("ls")...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SIZE CREATED" || !strings.HasPrefix(lines[1], list[0].Name+" ") {
		t.Errorf("ls printed:\n%s", out)
	}

	// Prune keeps the newest of this node's snapshots of a name.
	for _, name := range []string{"etcd-snapshot-node1-100.db", "etcd-snapshot-node1-200.db", "etcd-snapshot-node1-300.db", "etcd-snapshot-node2-50.db"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runSnapshot(t, with("prune", "--snapshot-retention", "0")...); err == nil || !strings.Contains(err.Error(), "--snapshot-retention") {
		t.Errorf("prune --snapshot-retention 0: %v, want an error naming the flag", err)
	}
	out, err = runSnapshot(t, with("prune", "--snapshot-retention", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	if out != "deleted etcd-snapshot-node1-100.db\n" {
		t.Errorf("prune printed %q", out)
	}

	if _, err := runSnapshot(t, with("delete", "etcd-snapshot-node1-200.db", "missing.db")...); err == nil || !strings.Contains(err.Error(), `"missing.db"`) {
		t.Errorf("delete of an unknown snapshot: %v, want an error naming it", err)
	}
	if _, err := runSnapshot(t, with("delete", "etcd-snapshot-node1-200.db", list[0].Name)...); err != nil {
		t.Fatal(err)
	}
	var left []string
	list, _ = etcdsnapshot.List(dir)
	for _, s := range list {
		left = append(left, s.Name)
	}
	if strings.Join(left, " ") != "etcd-snapshot-node2-50.db etcd-snapshot-node1-300.db" {
		t.Errorf("left %v", left)
	}
}

func TestEtcdSnapshotReadsServerConfigFile(t *testing.T) {
	dataDir := t.TempDir()
	config := filepath.Join(t.TempDir(), "config.yaml")
	snapDir := filepath.Join(t.TempDir(), "snaps")
	// Server keys the command does not have are ignored, not refused.
	writeFile(t, config, "data-dir: "+dataDir+"\nnode-name: n9\ntls-san: [a.example]\netcd-snapshot-retention: 1\n")
	writeFile(t, config+".d/10-dir.yaml", "etcd-snapshot-dir: "+snapDir+"\n")
	for _, name := range []string{"etcd-snapshot-n9-1.db", "etcd-snapshot-n9-2.db"} {
		writeFile(t, filepath.Join(snapDir, name), "x")
	}
	out, err := runSnapshot(t, "prune", "--config", config)
	if err != nil || out != "deleted etcd-snapshot-n9-1.db\n" {
		t.Errorf("prune with the config file: %q, %v; want the older snapshot deleted", out, err)
	}
	// The command line wins over the file.
	writeFile(t, filepath.Join(snapDir, "etcd-snapshot-n9-3.db"), "x")
	if out, err := runSnapshot(t, "prune", "--config", config, "--snapshot-retention", "2"); err != nil || out != "" {
		t.Errorf("prune --snapshot-retention 2: %q, %v; want nothing deleted", out, err)
	}
}

func TestEtcdSnapshotSaveWithoutServer(t *testing.T) {
	dataDir := t.TempDir()
	_, err := runSnapshot(t, "save", "--config", emptyConfig(t), "--data-dir", dataDir, "--node-name", "n",
		"--etcd-endpoint", "http://"+envtest.FreeAddr(t))
	if err == nil || !strings.Contains(err.Error(), "is orch server running on this host?") {
		t.Fatalf("save with no server: %v, want it to ask whether orch server runs", err)
	}
	if list, _ := etcdsnapshot.List(etcdsnapshot.DefaultDir(dataDir)); len(list) != 0 {
		t.Errorf("a failed save left %v", list)
	}
}

func TestEtcdSnapshotSaveOverTLS(t *testing.T) {
	dataDir := t.TempDir()
	files, err := pki.EnsureEtcd(filepath.Join(dataDir, "server", "tls", "etcd"), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := envtest.FreeAddr(t)
	e, err := storage.StartEtcd(storage.EtcdConfig{Dir: t.TempDir(), Name: "orch", UnsafeNoFsync: true,
		ClientURL: "https://" + addr, PeerURL: "http://" + envtest.FreeAddr(t),
		ClientTLS: transport.TLSInfo{CertFile: files.ServerCert, KeyFile: files.ServerKey, TrustedCAFile: files.CACert, ClientCertAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Client.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	// Only the client certificate in data-dir opens this etcd.
	if _, err := runSnapshot(t, "save", "--config", emptyConfig(t), "--data-dir", t.TempDir(), "--node-name", "n",
		"--etcd-snapshot-dir", t.TempDir(), "--etcd-endpoint", "https://"+addr, "--timeout", "20s"); err == nil {
		t.Error("save without the client certificate succeeded")
	}
	if _, err := runSnapshot(t, "save", "--config", emptyConfig(t), "--data-dir", dataDir, "--node-name", "n",
		"--etcd-endpoint", "https://"+addr); err != nil {
		t.Fatal(err)
	}
	list, _ := etcdsnapshot.List(etcdsnapshot.DefaultDir(dataDir))
	if len(list) != 1 {
		t.Fatalf("snapshots after save over TLS: %v", list)
	}
	defer func() {
		if list, _ := etcdsnapshot.List(etcdsnapshot.DefaultDir(dataDir)); len(list) != 2 {
			t.Errorf("snapshots after a save with an http endpoint: %v, want 2", list)
		}
	}()
	// An http URL, the default's or one given, becomes https when the
	// client certificate is there (every server's etcd speaks only TLS).
	if _, err := runSnapshot(t, "save", "--config", emptyConfig(t), "--data-dir", dataDir, "--node-name", "n",
		"--etcd-endpoint", "http://"+addr, "--name", "given-http"); err != nil {
		t.Fatalf("save with --etcd-endpoint http://: %v", err)
	}
	client, err := connectEtcd(ctx, dataDir, "http://"+addr)
	if err != nil {
		t.Fatalf("connect with the default endpoint and a client certificate: %v", err)
	}
	if got := client.Endpoints(); len(got) != 1 || got[0] != "https://"+addr {
		t.Errorf("connected to %v, want https://%s", got, addr)
	}
	client.Close()
	if err := etcdsnapshot.Verify(list[0].Path); err != nil {
		t.Error(err)
	}
}
