// Command orch is a Kubernetes-compatible cluster in one binary: `orch server`
// runs the control plane, `orch kubectl` the real kubectl against it.
package main

import (
	"os"

	"orch/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args))
}
