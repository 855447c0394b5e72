package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// kernelTunables are the sysctls the kubelet needs set, with upstream's
// values: overcommit for the OOM killer's accounting, and a kernel that
// reboots on a panic rather than hanging.
var kernelTunables = []struct {
	name string
	want int
}{
	{"vm.overcommit_memory", 1},
	{"vm.panic_on_oom", 0},
	{"kernel.panic", 10},
	{"kernel.panic_on_oops", 1},
	{"kernel.keys.root_maxkeys", 1000000},
	{"kernel.keys.root_maxbytes", 25000000},
}

// ensureKernelTunables sets the tunables under procSys (/proc/sys), as
// upstream's kubelet does; with protect (--protect-kernel-defaults) it
// changes nothing and fails, naming each one that differs.
func ensureKernelTunables(procSys string, protect bool, log *slog.Logger) error {
	var differ []string
	for _, t := range kernelTunables {
		path := filepath.Join(procSys, strings.ReplaceAll(t.name, ".", "/"))
		data, err := os.ReadFile(path)
		if err != nil {
			log.Warn("cannot read a kernel tunable the kubelet needs", "sysctl", t.name, "err", err)
			continue
		}
		got, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err == nil && got == t.want {
			continue
		}
		if protect {
			differ = append(differ, fmt.Sprintf("%s is %s, want %d", t.name, strings.TrimSpace(string(data)), t.want))
			continue
		}
		if err := os.WriteFile(path, []byte(strconv.Itoa(t.want)), 0o644); err != nil {
			log.Warn("cannot set a kernel tunable the kubelet needs", "sysctl", t.name, "want", t.want, "err", err)
			continue
		}
		log.Info("set a kernel tunable the kubelet needs", "sysctl", t.name, "was", strings.TrimSpace(string(data)), "now", t.want)
	}
	if len(differ) > 0 {
		return errors.New("orch agent: --protect-kernel-defaults: " + strings.Join(differ, "; ") +
			" (set them, e.g. in /etc/sysctl.d/90-kubelet.conf, or start without --protect-kernel-defaults to have orch set them)")
	}
	return nil
}
