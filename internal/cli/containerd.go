package cli

import (
	"os"
	"path/filepath"

	ctrapp "github.com/containerd/containerd/v2/cmd/ctr/app"
	"github.com/urfave/cli/v2"

	"orch/internal/agent"
	"orch/internal/kubelet/containerd/daemon"
)

// containerdCommand is containerd itself, built in: the agent runs it as
// `orch containerd --config FILE`, through a link named containerd in its
// runtime directory (docs/operations.md).
func containerdCommand() *cli.Command {
	return &cli.Command{
		Name:            "containerd",
		Usage:           "run containerd (built in, " + daemon.Version() + "); the agent starts it with the config it writes",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			return daemon.Run(c.Context, append([]string{"containerd"}, c.Args().Slice()...), os.Stderr)
		},
	}
}

// ctrCommand is containerd's ctr, aimed by default at the containerd of the
// agent with the default data dir, in the namespace of Kubernetes' pods
// (CONTAINERD_ADDRESS and CONTAINERD_NAMESPACE, or --address and
// --namespace, say otherwise).
func ctrCommand() *cli.Command {
	return &cli.Command{
		Name:            "ctr",
		Usage:           "run containerd's ctr against the agent's containerd (namespace k8s.io)",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			if os.Getenv("CONTAINERD_ADDRESS") == "" {
				os.Setenv("CONTAINERD_ADDRESS", filepath.Join(agent.ContainerdState(agent.DefaultDataDir), "containerd.sock"))
			}
			if os.Getenv("CONTAINERD_NAMESPACE") == "" {
				os.Setenv("CONTAINERD_NAMESPACE", "k8s.io")
			}
			return ctrapp.New().Run(c.Context, append([]string{"ctr"}, c.Args().Slice()...))
		},
	}
}
