// Command fakeproc stands in for orch, containerd and a containerd shim in
// killall-scenario.sh: it sleeps until killed, whatever its arguments.
// With CHILD_NETNS=NAME it first starts a child (a pod's process) in the
// network namespace /run/netns/NAME. "fakeproc agent cleanup" (what the
// killall script runs) returns at once.
package main

import (
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "cleanup" {
		return
	}
	if ns := os.Getenv("CHILD_NETNS"); ns != "" {
		os.Unsetenv("CHILD_NETNS")
		self, err := os.Executable()
		if err != nil {
			os.Exit(1)
		}
		if err := exec.Command("nsenter", "--net=/run/netns/"+ns, self, "pod").Start(); err != nil {
			os.Exit(1)
		}
	}
	for {
		time.Sleep(time.Hour)
	}
}
