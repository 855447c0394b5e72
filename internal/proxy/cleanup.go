package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"

	"orch/internal/iptsync"
)

// allFamilies are the IP families Cleanup removes rules of.
var allFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}

// Cleanup removes every rule and chain the proxy writes, in both modes and
// both IP families: the nftables tables ip and ip6 kube-proxy, the jump
// rules from the built-in chains, then the KUBE-* chains of the nat and
// filter tables that the proxy owns, KUBE-FIREWALL included (orch's agent
// is the node's kubelet). Chains and rules of other programs (a CNI
// plugin's, an operator's) stay. It is for `orch agent` uninstall and for
// switching the proxy off; it must not run while a Proxier runs.
func Cleanup(log *slog.Logger) error {
	var errs []error
	for _, f := range allFamilies {
		errs = append(errs, cleanupIPTables(f, log), cleanupNFTables(f, log))
	}
	return errors.Join(errs...)
}

// cleanupIPTables removes the iptables mode's rules of the family. A node
// without ip6tables (or IPv6) has no IPv6 rules of ours (the proxy cannot start its
// IPv6 family there), so that is not an error; a missing iptables (IPv4)
// is, as it always was.
func cleanupIPTables(f v1.IPFamily, log *slog.Logger) error {
	if f == v1.IPv6Protocol && iptsync.NoIPv6() {
		return nil
	}
	d, err := newIPTablesDriver(f)
	if err != nil {
		return err
	}
	return cleanup(d, f, log)
}

// cleanupNFTables deletes the nftables mode's table of the family; nothing
// to do where nft is missing or the table does not exist.
func cleanupNFTables(f v1.IPFamily, log *slog.Logger) error {
	nft, err := knftables.New(nftFamily(f), nftTable)
	if err != nil {
		return nil // no nft: no table of ours either
	}
	table := string(nftFamily(f)) + " " + nftTable
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(context.Background(), tx); err != nil {
		if knftables.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("proxy: delete the nftables table %s: %w", table, err)
	}
	log.Info("removed the proxy's nftables table", "table", table)
	return nil
}

func cleanup(d *iptsync.Driver, f v1.IPFamily, log *slog.Logger) error {
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
		data, n := iptsync.CleanupText(table, chains, func(c string) bool { return isOwnedChain(table, c, f == v1.IPv6Protocol) })
		if n == 0 {
			continue
		}
		if err := d.Restore(data); err != nil {
			errs = append(errs, fmt.Errorf("proxy: remove %s chains of table %s: %w", f, table, err))
			continue
		}
		log.Info("removed proxy chains", "family", f, "table", table, "chains", n)
	}
	return errors.Join(errs...)
}
