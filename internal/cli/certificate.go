package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"orch/internal/server"
)

func certificateCommand() *cli.Command {
	return &cli.Command{
		Name:  "certificate",
		Usage: "manage the server's certificates",
		Subcommands: []*cli.Command{{
			Name:  "rotate",
			Usage: "issue new leaf certificates (apiserver serving, admin, etcd) now; the cluster CA stays",
			Flags: []cli.Flag{&cli.StringFlag{Name: "data-dir", Value: "/var/lib/orch", Usage: "the server's data dir"}},
			Action: func(c *cli.Context) error {
				dir := filepath.Join(c.String("data-dir"), "server", "tls")
				if _, err := os.Stat(dir); err != nil {
					return cli.Exit(fmt.Sprintf("orch certificate rotate: no server certificates in %s: is --data-dir the server's? (%v)", dir, err), 1)
				}
				if err := os.WriteFile(filepath.Join(dir, server.RotateRequestFile), nil, 0o600); err != nil {
					return cli.Exit("orch certificate rotate: "+err.Error(), 1)
				}
				fmt.Fprintf(c.App.Writer, "asked for new certificates: a running server issues them within 10 seconds, a stopped one when it starts; "+
					"the admin kubeconfig is rewritten with the new admin certificate\n")
				return nil
			},
		}},
	}
}
