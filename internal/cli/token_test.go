package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"orch/internal/envtest"
	"orch/internal/jointoken"
	"orch/internal/pki"
	"orch/internal/server"
)

// runToken runs `orch token args...` and returns its output and error
// (nil, or the cli.Exit message).
func runToken(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	app := &cli.App{Name: "orch", Commands: []*cli.Command{tokenCommand()}, Writer: &out, ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"orch", "token"}, args...))
	if err != nil {
		var exit cli.ExitCoder
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("token %v returned %v, want a cli.Exit with code 1", args, err)
		}
	}
	return out.String(), err
}

func fileToken(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestTokenRotateCommand runs orch token rotate against a real server:
// the server token, then the agent token to a passphrase; the command
// prints the new token, which the files hold, and refuses bad input.
func TestTokenRotateCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	dir := t.TempDir()
	etcdPort := envtest.FreePort(t)
	cfg := server.Config{
		DataDir: dir, WriteKubeconfig: filepath.Join(dir, "admin.yaml"), WriteKubeconfigMode: 0o600, DisableAgent: true,
		HTTPSPort: envtest.FreePort(t), BindAddress: "127.0.0.1", AdvertiseAddress: "127.0.0.1",
		ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		EtcdClientPort: etcdPort, EtcdPeerPort: envtest.FreePort(t), UnsafeNoFsync: true,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop within 30s")
		}
	}()
	endpoint := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	envtest.Eventually(t, "the server keeps its join tokens in etcd", func() (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, err
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		client, err := connectEtcd(cctx, dir, endpoint)
		if err != nil {
			return false, nil
		}
		defer client.Close()
		resp, err := client.Get(cctx, jointoken.Key)
		return err == nil && len(resp.Kvs) == 1, nil
	})
	common := []string{"--config", emptyConfig(t), "--data-dir", dir, "--etcd-endpoint", endpoint}
	serverFile, agentFile := filepath.Join(dir, "server", "token"), filepath.Join(dir, "server", "agent-token")
	oldServer, oldAgent := fileToken(t, serverFile), fileToken(t, agentFile)

	out, err := runToken(t, append([]string{"rotate"}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	newServer := fileToken(t, serverFile)
	if newServer == oldServer || fileToken(t, agentFile) != oldAgent {
		t.Errorf("after rotate: server token file %q (old %q), agent token file changed: %v", newServer, oldServer, fileToken(t, agentFile) != oldAgent)
	}
	if !strings.Contains(out, "\n"+newServer+"\n") || !strings.Contains(out, "--token") || strings.Contains(out, oldServer) {
		t.Errorf("rotate printed:\n%s", out)
	}

	out, err = runToken(t, append([]string{"rotate", "--agent", "--new-token", "agent-pass"}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	newAgent := pki.FormatAgentToken(pki.CAHash([]byte(mustRead(t, filepath.Join(dir, "server", "tls", pki.CACertFile)))), "agent-pass")
	if got := fileToken(t, agentFile); got != newAgent || fileToken(t, serverFile) != newServer {
		t.Errorf("after rotate --agent: agent token file %q, want %q; server token changed: %v", got, newAgent, fileToken(t, serverFile) != newServer)
	}
	if !strings.Contains(out, "\n"+newAgent+"\n") || !strings.Contains(out, "--agent-token") {
		t.Errorf("rotate --agent printed:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		say  string
	}{
		{[]string{"rotate", "--agent", "--new-token", "agent-pass"}, "current agent token"},
		{[]string{"rotate", "--new-token", newAgent}, "::node: token"},
		{[]string{"rotate", "--new-token", oldServer}, "rotated away"},
		{[]string{"rotate", "--new-token", " "}, "--new-token is empty"},
		{[]string{"rotate", "extra"}, "unexpected arguments"},
	} {
		if _, err := runToken(t, append(tc.args, common...)...); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("token %v: %v, want an error saying %q", tc.args, err, tc.say)
		}
	}
	if got := fileToken(t, serverFile); got != newServer {
		t.Errorf("a refused rotation changed the server token file to %q", got)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTokenRotateWithoutServer: without a running server the command
// says so.
func TestTokenRotateWithoutServer(t *testing.T) {
	_, err := runToken(t, "rotate", "--config", emptyConfig(t), "--data-dir", t.TempDir(), "--etcd-endpoint", "http://"+envtest.FreeAddr(t))
	if err == nil || !strings.Contains(err.Error(), "is orch server running on this host?") {
		t.Errorf("rotate without a server: %v", err)
	}
}

func TestRotatedMessage(t *testing.T) {
	for _, tc := range []struct {
		agent      bool
		want, omit []string
	}{
		{false, []string{"server token", "/d/server/token", "K10s", "--token or --token-file", "agent token (/d/server/agent-token) are unaffected", "renewal", "--cluster-reset"}, []string{"K10a"}},
		{true, []string{"agent token", "/d/server/agent-token", "K10a", "--agent-token", "is unchanged"}, []string{"K10s"}},
	} {
		msg := rotatedMessage(tc.agent, "K10s", "K10a", "/d")
		for _, s := range tc.want {
			if !strings.Contains(msg, s) {
				t.Errorf("agent=%v: the message lacks %q:\n%s", tc.agent, s, msg)
			}
		}
		for _, s := range tc.omit {
			if strings.Contains(msg, s) {
				t.Errorf("agent=%v: the message shows %q:\n%s", tc.agent, s, msg)
			}
		}
	}
}
