package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-iptables/iptables"
)

// ruleWriter is what a sync needs from iptables.
type ruleWriter interface {
	// EnsureJumps makes the built-in chains jump to the proxy's chains. It
	// reports whether a jump or chain was missing and had to be put back.
	EnsureJumps() (repaired bool, err error)
	// Restore applies iptables-restore input without flushing other chains.
	Restore(data []byte) error
	// Chains lists the chains of a table.
	Chains(table string) ([]string, error)
}

// jump is a rule in a built-in chain that sends packets to one of ours.
type jump struct {
	table, from, to string
	args            []string // match, before the comment
	comment         string   // none when empty
}

func (j jump) spec() []string {
	spec := append([]string{}, j.args...)
	if j.comment != "" {
		spec = append(spec, "-m", "comment", "--comment", j.comment)
	}
	return append(spec, "-j", j.to)
}

var ctNew = []string{"-m", "conntrack", "--ctstate", "NEW"}

// jumps are upstream's, in upstream's order; each is inserted at the top
// of its built-in chain.
var jumps = []jump{
	{"filter", "INPUT", chainExternalServices, ctNew, "kubernetes externally-visible service portals"},
	{"filter", "FORWARD", chainExternalServices, ctNew, "kubernetes externally-visible service portals"},
	{"filter", "INPUT", chainNodePorts, nil, "kubernetes health check service ports"},
	{"filter", "FORWARD", chainServices, ctNew, "kubernetes service portals"},
	{"filter", "OUTPUT", chainServices, ctNew, "kubernetes service portals"},
	{"filter", "FORWARD", chainForward, nil, "kubernetes forwarding rules"},
	{"filter", "INPUT", chainProxyFirewall, ctNew, "kubernetes load balancer firewall"},
	{"filter", "OUTPUT", chainProxyFirewall, ctNew, "kubernetes load balancer firewall"},
	{"filter", "FORWARD", chainProxyFirewall, ctNew, "kubernetes load balancer firewall"},
	{"nat", "OUTPUT", chainServices, nil, "kubernetes service portals"},
	{"nat", "PREROUTING", chainServices, nil, "kubernetes service portals"},
	{"nat", "POSTROUTING", chainPostrouting, nil, "kubernetes postrouting rules"},
	{"filter", "INPUT", chainFirewall, nil, ""}, // as the kubelet writes them
	{"filter", "OUTPUT", chainFirewall, nil, ""},
}

// iptablesDriver is the real ruleWriter: go-iptables for the jump rules,
// iptables-restore and iptables-save for the rest.
type iptablesDriver struct {
	ipt     *iptables.IPTables
	restore string
	save    string
}

var _ ruleWriter = (*iptablesDriver)(nil)

func newIPTablesDriver() (*iptablesDriver, error) {
	ipt, err := iptables.New(iptables.IPFamily(iptables.ProtocolIPv4), iptables.Timeout(5))
	if err != nil {
		return nil, fmt.Errorf("proxy: iptables is not usable (%w); install the iptables package (Debian: apt-get install iptables)", err)
	}
	d := &iptablesDriver{ipt: ipt}
	for _, t := range []struct {
		dst  *string
		name string
	}{{&d.restore, "iptables-restore"}, {&d.save, "iptables-save"}} {
		p, err := exec.LookPath(t.name)
		if err != nil {
			return nil, fmt.Errorf("proxy: %s not found in PATH; install the iptables package (Debian: apt-get install iptables)", t.name)
		}
		*t.dst = p
	}
	return d, nil
}

// EnsureJumps creates the target chains when missing and inserts each jump
// rule once, reporting whether anything was missing.
func (d *iptablesDriver) EnsureJumps() (repaired bool, err error) {
	for _, j := range jumps {
		ok, err := d.ipt.ChainExists(j.table, j.to)
		if err != nil {
			return repaired, fmt.Errorf("proxy: check chain %q in table %s: %w", j.to, j.table, err)
		}
		if !ok {
			if err := d.ipt.NewChain(j.table, j.to); err != nil {
				return repaired, fmt.Errorf("proxy: create chain %q in table %s: %w", j.to, j.table, err)
			}
			repaired = true
		}
		ok, err = d.ipt.Exists(j.table, j.from, j.spec()...)
		if err != nil {
			return repaired, fmt.Errorf("proxy: check jump %s -> %s in table %s: %w", j.from, j.to, j.table, err)
		}
		if !ok {
			if err := d.ipt.Insert(j.table, j.from, 1, j.spec()...); err != nil {
				return repaired, fmt.Errorf("proxy: insert jump %s -> %s in table %s: %w", j.from, j.to, j.table, err)
			}
			repaired = true
		}
	}
	return repaired, nil
}

var failedLine = regexp.MustCompile(`line:? (\d+)`)

// commandTimeout bounds one iptables-restore or iptables-save: a hung one
// becomes an error (and a retry) instead of stopping every later sync.
const commandTimeout = 2 * time.Minute

// Restore runs iptables-restore --noflush with data on stdin. Each table
// in data commits as one transaction.
func (d *iptablesDriver) Restore(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.restore, "--noflush", "-w", "5")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if m := failedLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			msg += "; input around it:\n" + linesAround(data, n, 2)
		}
		return fmt.Errorf("proxy: iptables-restore failed: %w: %s", err, msg)
	}
	return nil
}

// linesAround returns the lines n-k..n+k (1-based) of data, numbered.
func linesAround(data []byte, n, k int) string {
	lines := strings.Split(string(data), "\n")
	var b strings.Builder
	for i := max(1, n-k); i <= min(len(lines), n+k); i++ {
		fmt.Fprintf(&b, "%6d  %s\n", i, lines[i-1])
	}
	return b.String()
}

// Chains lists the chains of table, from iptables-save.
func (d *iptablesDriver) Chains(table string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, d.save, "-t", table).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("proxy: iptables-save -t %s: %w", table, err)
	}
	return chainsInSave(out), nil
}

// deleteJumps removes every copy of the proxy's jump rules.
func (d *iptablesDriver) deleteJumps() error {
	var errs []error
	for _, j := range jumps {
		for range 10 { // a rule inserted more than once, by older runs
			ok, err := d.ipt.Exists(j.table, j.from, j.spec()...)
			if err != nil {
				// The target chain is gone, so no rule can jump to it.
				break
			}
			if !ok {
				break
			}
			if err := d.ipt.Delete(j.table, j.from, j.spec()...); err != nil {
				errs = append(errs, fmt.Errorf("proxy: delete jump %s -> %s in table %s: %w", j.from, j.to, j.table, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}
