package cli

import (
	"github.com/urfave/cli/v2"

	"orch/internal/checkconfig"
	"orch/internal/kubelet/containerd/daemon"
	"orch/internal/kubelet/containerd/payload"
)

func checkConfigCommand() *cli.Command {
	return &cli.Command{
		Name:  "check-config",
		Usage: "report the kernel and host features orch needs, with a fix for each missing one",
		Description: "Checks cgroups and their controllers, kernel options (namespaces, netfilter, bridge, veth, VXLAN, overlayfs), " +
			"br_netfilter, IP forwarding, swap, and iptables and its backend; and the node runtime orch carries itself (containerd " +
			"built in; runc, containerd-shim-runc-v2 and the CNI plugins embedded), which the host does not provide. " +
			"Exits 1 when a required feature is missing, 0 otherwise (warnings included).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kernel-config", Usage: "kernel config file to check, gzipped or not (default: /proc/config.gz, then /boot/config-$(uname -r))"},
			&cli.BoolFlag{Name: "cis", Usage: "instead, check the running orch server and agent against the automatable items of the CIS Kubernetes Benchmark " +
				"(file permissions, flags in effect, anonymous access, encryption, audit, Pod Security): PASS, WARN or FAIL each; exits 1 on a FAIL"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("cis") {
				return runCIS(c)
			}
			results := checkconfig.Run(checkconfig.OS{}, checkconfig.Options{
				KernelConfig: c.String("kernel-config"),
				Runtime:      runtimeInfo(),
			})
			if err := checkconfig.Write(c.App.Writer, results); err != nil {
				return cli.Exit("orch check-config: write the report: "+err.Error(), 1)
			}
			if checkconfig.Failed(results) {
				return cli.Exit("orch check-config: orch needs the features marked missing; apply the fix under each and run orch check-config again", 1)
			}
			return nil
		},
	}
}

// runtimeInfo describes the node runtime this binary carries, for
// check-config (which does not link containerd itself).
func runtimeInfo() checkconfig.RuntimeInfo {
	files, err := payload.Manifest()
	rt := checkconfig.RuntimeInfo{ContainerdVersion: daemon.Version(), Err: err}
	for _, f := range files {
		rt.Files = append(rt.Files, f.Name)
	}
	return rt
}
