package cli

import (
	"os"

	"github.com/urfave/cli/v2"
	componentcli "k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

// defaultKubeconfig is where `orch server` writes the admin kubeconfig.
const defaultKubeconfig = "/etc/orch/orch.yaml"

func kubectlCommand() *cli.Command {
	return &cli.Command{
		Name:            "kubectl",
		Usage:           "run kubectl (the real one, built in) against this cluster",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			if os.Getenv("KUBECONFIG") == "" {
				if _, err := os.Stat(defaultKubeconfig); err == nil {
					os.Setenv("KUBECONFIG", defaultKubeconfig)
				}
			}
			command := cmd.NewDefaultKubectlCommand()
			command.SetArgs(c.Args().Slice())
			if code := componentcli.Run(command); code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
