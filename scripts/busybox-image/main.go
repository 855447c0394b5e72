// Command busybox-image writes a container image archive of the host's
// static busybox (Debian's busybox-static), named orch.test/busybox:1, to
// the file its argument names; `make busybox-image` puts it where an
// agent imports images from. It is for trying orch without a registry.
package main

import (
	"fmt"
	"os"

	"orch/internal/kubelet/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "busybox-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: busybox-image FILE.tar (e.g. /var/lib/orch/agent/images/busybox.tar)")
	}
	if err := images.WriteBusyboxFile(args[0]); err != nil {
		return fmt.Errorf("%w (install Debian's busybox-static: apt-get install busybox-static)", err)
	}
	fmt.Printf("wrote %s (%s)\n", args[0], images.BusyboxRef)
	return nil
}
