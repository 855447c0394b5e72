// Package cli turns the command line (and /etc/orch/config.yaml) into the
// Config of each subcommand and runs it. It holds no logic of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"orch/internal/version"
)

// Main runs orch with args (os.Args) and returns the process exit code.
func Main(args []string) int {
	// Linked as kubectl (install.sh does it when no kubectl exists), orch
	// is `orch kubectl`; linked as containerd (the agent runs it so) or
	// ctr, `orch containerd` or `orch ctr`.
	if len(args) > 0 {
		if name := filepath.Base(args[0]); name == "kubectl" || name == "containerd" || name == "ctr" {
			args = append([]string{args[0], name}, args[1:]...)
		}
	}
	app := &cli.App{
		Name:    "orch",
		Usage:   "a Kubernetes-compatible cluster in one binary",
		Version: version.Version,
		Commands: []*cli.Command{
			serverCommand(),
			agentCommand(),
			kubectlCommand(),
			containerdCommand(),
			ctrCommand(),
			etcdSnapshotCommand(),
			checkConfigCommand(),
			certificateCommand(),
			tokenCommand(),
			secretsEncryptCommand(),
		},
		HideHelpCommand: true,
	}
	cli.VersionPrinter = func(c *cli.Context) { printVersion(c.App.Writer) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.RunContext(ctx, args); err != nil {
		var exit cli.ExitCoder
		if errors.As(err, &exit) {
			if exit.Error() != "" {
				fmt.Fprintln(os.Stderr, exit.Error())
			}
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "orch: %v\n", err)
		return 1
	}
	return 0
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "orch version %s (%s)\nKubernetes %s (%s)\n", version.Version, version.GitCommit, version.Kubernetes, version.GitVersion())
}
