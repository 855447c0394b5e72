package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"orch/internal/server"
)

// secretsEncryptCommand is `orch secrets-encrypt`, k3s's commands for the
// managed encryption of Secrets at rest (orch server --secrets-encryption).
func secretsEncryptCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: defaultConfigFile,
				Usage: "the server's config file (plus every *.yaml in <file>.d/): its data-dir applies unless given here; other keys are ignored"},
			&cli.StringFlag{Name: "data-dir", Value: "/var/lib/orch", Usage: "the orch server's data directory"},
			&cli.StringFlag{Name: "etcd-endpoint", Value: defaultEtcdEndpoint, Usage: "client URL of this host's etcd (with the etcd client certificate in DATA-DIR/server/tls/etcd)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up after this long"},
		}, extra...)
	}
	force := &cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "go on even if a server does not use the configuration of the step before yet"}
	sub := func(name, usage string, withForce bool) *cli.Command {
		var extra []cli.Flag
		if withForce {
			extra = append(extra, force)
		}
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: " ", Flags: flags(extra...),
			Before: func(c *cli.Context) error { return loadServerConfig(c, "orch secrets-encrypt "+name, tokenConfigKeys) },
			Action: func(c *cli.Context) error { return runSecretsEncrypt(c, name) },
		}
	}
	return &cli.Command{
		Name:  "secrets-encrypt",
		Usage: "rotate the keys Secrets are encrypted with at rest (servers started with --secrets-encryption); run as root on a server, with its server running",
		Description: "A rotation is prepare (add a key that only reads), rotate (make it the one that writes), then reencrypt (rewrite every Secret with it " +
			"and drop the old key); rotate-keys does the three. Each step waits until every running server uses the configuration of the step before " +
			"(status shows it); the servers follow each change within a second, without a restart.",
		Subcommands: []*cli.Command{
			sub("status", "show the stage of the rotation, the keys and whether every server uses the cluster's configuration", false),
			sub("prepare", "add a new key that reads but does not write yet", true),
			sub("rotate", "make the prepared key the one that writes", true),
			sub("reencrypt", "rewrite every Secret with the writing key, then drop the other keys", true),
			sub("rotate-keys", "prepare, rotate and reencrypt in one go", false),
		},
	}
}

func runSecretsEncrypt(c *cli.Context, command string) error {
	fail := func(err error) error { return cli.Exit("orch secrets-encrypt "+command+": "+err.Error(), 1) }
	if c.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", c.Args().Slice()))
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	client, err := connectEtcd(ctx, c.String("data-dir"), c.String("etcd-endpoint"))
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	e := server.SecretsEncryption{DataDir: c.String("data-dir"), Force: c.Bool("force"), Out: c.App.Writer}
	if err := e.Run(ctx, client, command); err != nil {
		return fail(err)
	}
	return nil
}
