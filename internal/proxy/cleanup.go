package proxy

import (
	"errors"
	"fmt"
	"log/slog"

	"orch/internal/iptsync"
)

// Cleanup removes every rule and chain the proxy writes: the jump rules
// from the built-in chains, then the KUBE-* chains of the nat and filter
// tables that the proxy owns, KUBE-FIREWALL included (orch's agent is the
// node's kubelet). Chains and rules of other programs (a CNI plugin's, an
// operator's) stay. It is for
// `orch agent` uninstall and for switching the proxy off; it must not run
// while a Proxier runs.
func Cleanup(log *slog.Logger) error {
	d, err := newIPTablesDriver()
	if err != nil {
		return err
	}
	return cleanup(d, log)
}

func cleanup(d *iptsync.Driver, log *slog.Logger) error {
	var errs []error
	if err := d.Jumps.Delete(); err != nil {
		errs = append(errs, err)
	}
	for _, table := range []string{"nat", "filter"} {
		chains, err := d.Chains(table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data, n := iptsync.CleanupText(table, chains, func(c string) bool { return isOwnedChain(table, c) })
		if n == 0 {
			continue
		}
		if err := d.Restore(data); err != nil {
			errs = append(errs, fmt.Errorf("proxy: remove chains of table %s: %w", table, err))
			continue
		}
		log.Info("removed proxy chains", "table", table, "chains", n)
	}
	return errors.Join(errs...)
}
