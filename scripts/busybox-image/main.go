// Command busybox-image writes a container image archive of the host's
// static busybox (Debian's busybox-static), named orch.test/busybox:1, to
// the file its argument names; `make busybox-image` puts it where an
// agent imports images from. It is for trying orch without a registry.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"orch/internal/kubelet/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "busybox-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("busybox-image", flag.ContinueOnError)
	arch := fs.String("arch", runtime.GOARCH, "the architecture of the busybox binary")
	busybox := fs.String("busybox", "/bin/busybox", "a static busybox binary of that architecture")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: busybox-image [-arch ARCH -busybox PATH] FILE.tar (e.g. /var/lib/orch/agent/images/busybox.tar)")
	}
	args = fs.Args()
	if err := images.WriteBusyboxFileFor(args[0], *busybox, *arch); err != nil {
		return fmt.Errorf("%w (install Debian's busybox-static: apt-get install busybox-static)", err)
	}
	fmt.Printf("wrote %s (%s)\n", args[0], images.BusyboxRef)
	return nil
}
