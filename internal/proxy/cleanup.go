package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"sigs.k8s.io/knftables"

	"orch/internal/iptsync"
)

// Cleanup removes every rule and chain the proxy writes, in both modes:
// the nftables table ip kube-proxy, the jump rules from the built-in
// chains, then the KUBE-* chains of the nat and filter tables that the
// proxy owns, KUBE-FIREWALL included (orch's agent is the
// node's kubelet). Chains and rules of other programs (a CNI plugin's, an
// operator's) stay. It is for
// `orch agent` uninstall and for switching the proxy off; it must not run
// while a Proxier runs.
func Cleanup(log *slog.Logger) error {
	return errors.Join(cleanupIPTables(log), cleanupNFTables(log))
}

func cleanupIPTables(log *slog.Logger) error {
	d, err := newIPTablesDriver()
	if err != nil {
		return err
	}
	return cleanup(d, log)
}

// cleanupNFTables deletes the nftables mode's table; nothing to do where
// nft is missing or the table does not exist.
func cleanupNFTables(log *slog.Logger) error {
	nft, err := knftables.New(knftables.IPv4Family, nftTable)
	if err != nil {
		return nil // no nft: no table of ours either
	}
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(context.Background(), tx); err != nil {
		if knftables.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("proxy: delete the nftables table ip %s: %w", nftTable, err)
	}
	log.Info("removed the proxy's nftables table", "table", "ip "+nftTable)
	return nil
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
