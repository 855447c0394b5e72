package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"orch/internal/server"
)

// tokenConfigKeys are the keys of the server's config file that orch token
// reads, and the flag each sets.
var tokenConfigKeys = map[string]string{"data-dir": "data-dir"}

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "manage the cluster's join tokens (the server token and the agent token)",
		Subcommands: []*cli.Command{{
			Name: "rotate",
			Usage: "replace the server token (with --agent: the agent token) on every server of the cluster; " +
				"run it as root on a server, with its server running",
			Description: "Every running server accepts the new token within a second and refuses the old one from then on; " +
				"the cluster's bootstrap data in etcd is sealed again with the server token. The new token is printed, with what to update next.",
			ArgsUsage: " ",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: defaultConfigFile,
					Usage: "the server's config file (plus every *.yaml in <file>.d/): its data-dir applies unless given here; other keys are ignored"},
				&cli.StringFlag{Name: "data-dir", Value: "/var/lib/orch", Usage: "the orch server's data directory"},
				&cli.BoolFlag{Name: "agent", Usage: "rotate the agent token (data-dir/server/agent-token), which joins agents only, instead of the server token"},
				&cli.StringFlag{Name: "new-token", Usage: "the new token: a full token of this cluster (K10<hash>::server:<secret>, or ::node: with --agent) " +
					"or a passphrase (default: a new random secret)"},
				&cli.StringFlag{Name: "etcd-endpoint", Value: defaultEtcdEndpoint, Usage: "client URL of this host's etcd (with the etcd client certificate in DATA-DIR/server/tls/etcd)"},
				&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "give up after this long"},
			},
			Before: func(c *cli.Context) error { return loadServerConfig(c, "orch token rotate", tokenConfigKeys) },
			Action: runTokenRotate,
		}},
	}
}

func runTokenRotate(c *cli.Context) error {
	fail := func(err error) error { return cli.Exit("orch token rotate: "+err.Error(), 1) }
	if c.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q (give the new token with --new-token)", c.Args().Slice()))
	}
	if c.IsSet("new-token") && strings.TrimSpace(c.String("new-token")) == "" {
		return fail(errors.New("--new-token is empty: give the new token, or leave the flag out to have one generated"))
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	dataDir := c.String("data-dir")
	client, err := connectEtcd(ctx, dataDir, c.String("etcd-endpoint"))
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	r := server.TokenRotation{DataDir: dataDir, Agent: c.Bool("agent"), NewToken: strings.TrimSpace(c.String("new-token"))}
	serverToken, agentToken, err := server.RotateToken(ctx, client, r)
	if err != nil {
		return fail(err)
	}
	fmt.Fprint(c.App.Writer, rotatedMessage(r.Agent, serverToken, agentToken, dataDir))
	return nil
}

// rotatedMessage tells the operator the new token and what to do next.
func rotatedMessage(agent bool, serverToken, agentToken, dataDir string) string {
	serverFile := filepath.Join(dataDir, "server", "token")
	agentFile := filepath.Join(dataDir, "server", "agent-token")
	var b strings.Builder
	if !agent {
		fmt.Fprintf(&b, "Rotated the server token. The new server token (also in %s):\n\n%s\n\n", serverFile, serverToken)
		b.WriteString("Every running server of the cluster accepts it within a second, and refuses the old one from now on.\n" +
			"Next:\n" +
			"  - Servers given --token or --token-file (those that joined with --server, or a first server given a passphrase):\n" +
			"    put the new token there before they restart; a server started with the old one refuses to start.\n" +
			"  - Agents that joined with the agent token (" + agentFile + ") are unaffected.\n" +
			"  - Agents that joined with the old server token keep their certificates and keep running (restarts too), but their next renewal\n" +
			"    (due when a third of the certificates' one-year life remains, or at once when the apiserver refuses them)\n" +
			"    and any new join are refused: give them the agent token, or the new server token, with --token and restart them.\n" +
			"  - Etcd snapshots taken before now open only with the old server token: keep it to restore them\n" +
			"    (orch server --cluster-reset --cluster-reset-restore-path=FILE --token OLD-TOKEN).\n")
		return b.String()
	}
	fmt.Fprintf(&b, "Rotated the agent token. The new agent token (also in %s):\n\n%s\n\n", agentFile, agentToken)
	b.WriteString("Every running server of the cluster accepts it within a second, and refuses the old one from now on.\n" +
		"Next:\n" +
		"  - Agents that joined with the old agent token keep their certificates and keep running (restarts too), but their next renewal\n" +
		"    (due when a third of the certificates' one-year life remains, or at once when the apiserver refuses them)\n" +
		"    and any new join are refused: give them the new agent token with --token and restart them.\n" +
		"  - Servers given --agent-token or --agent-token-file: put the new one there, or remove the flag, before they restart;\n" +
		"    a server started with the old one refuses to start.\n" +
		"  - The server token (" + serverFile + ") is unchanged; agents that joined with it are unaffected.\n" +
		"  - Restoring an etcd snapshot taken before now brings the old agent token back.\n")
	return b.String()
}
