package iptsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-iptables/iptables"
	v1 "k8s.io/api/core/v1"
)

// Family is the IP family of the tables written: IPv4 through iptables,
// IPv6 through ip6tables. The two have separate tables in the kernel.
type Family int

const (
	IPv4 Family = iota // iptables, iptables-restore, iptables-save
	IPv6               // ip6tables, ip6tables-restore, ip6tables-save
)

// FamilyOf is the tables of an API IP family.
func FamilyOf(f v1.IPFamily) Family {
	if f == v1.IPv6Protocol {
		return IPv6
	}
	return IPv4
}

// IPFamily is f as the API names it.
func (f Family) IPFamily() v1.IPFamily {
	if f == IPv6 {
		return v1.IPv6Protocol
	}
	return v1.IPv4Protocol
}

// tool is the family's name of an iptables program: "iptables-save" is
// "ip6tables-save" for IPv6.
func (f Family) tool(name string) string {
	if f == IPv6 {
		return "ip6" + strings.TrimPrefix(name, "ip")
	}
	return name
}

func (f Family) String() string {
	if f == IPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// Exec runs the host's iptables-restore and iptables-save, or their ip6
// versions.
type Exec struct {
	who     string // the component, leading its errors: "proxy"
	family  Family
	restore string
	save    string
}

// NewExec finds the family's iptables-restore and iptables-save; who leads
// its errors.
func NewExec(f Family, who string) (*Exec, error) {
	e := &Exec{who: who, family: f}
	for _, t := range []struct {
		dst  *string
		name string
	}{{&e.restore, f.tool("iptables-restore")}, {&e.save, f.tool("iptables-save")}} {
		p, err := exec.LookPath(t.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %s not found in PATH; install the iptables package (Debian: apt-get install iptables)", who, t.name)
		}
		*t.dst = p
	}
	return e, nil
}

var failedLine = regexp.MustCompile(`line:? (\d+)`)

// commandTimeout bounds one iptables-restore or iptables-save: a hung one
// becomes an error (and a retry) instead of stopping every later sync.
const commandTimeout = 2 * time.Minute

// Restore runs (ip6)iptables-restore --noflush with data on stdin. Each table
// in data commits as one transaction.
func (e *Exec) Restore(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.restore, "--noflush", "-w", "5")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if m := failedLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			msg += "; input around it:\n" + linesAround(data, n, 2)
		}
		return fmt.Errorf("%s: %s failed: %w: %s", e.who, e.family.tool("iptables-restore"), err, msg)
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

// Chains lists the chains of a table, from (ip6)iptables-save.
func (e *Exec) Chains(table string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, e.save, "-t", table).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s: %s -t %s: %w", e.who, e.family.tool("iptables-save"), table, err)
	}
	return ChainsInSave(out), nil
}

// Jump is a rule in a built-in chain that sends packets to one of ours.
type Jump struct {
	Table, From, To string
	Args            []string // match, before the comment
	Comment         string   // none when empty
}

// Spec is the rule as go-iptables takes it.
func (j Jump) Spec() []string {
	spec := append([]string{}, j.Args...)
	if j.Comment != "" {
		spec = append(spec, "-m", "comment", "--comment", j.Comment)
	}
	return append(spec, "-j", j.To)
}

// Jumps keeps a list of jump rules with go-iptables.
type Jumps struct {
	who   string
	ipt   *iptables.IPTables
	jumps []Jump
	// first keeps each jump the first rule of its built-in chain, moving
	// it back when another program inserted a rule above it.
	first bool
}

// NewJumps opens the family's iptables for jumps; with first set, each
// must stay the first rule of its chain.
func NewJumps(f Family, who string, jumps []Jump, first bool) (*Jumps, error) {
	proto := iptables.ProtocolIPv4
	if f == IPv6 {
		proto = iptables.ProtocolIPv6
	}
	ipt, err := iptables.New(iptables.IPFamily(proto), iptables.Timeout(5))
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not usable (%w); install the iptables package (Debian: apt-get install iptables)", who, f.tool("iptables"), err)
	}
	return &Jumps{who: who, ipt: ipt, jumps: jumps, first: first}, nil
}

// Ensure creates the target chains when missing and inserts each jump
// rule once, at the top of its chain, reporting whether anything was
// missing (or, with first, not first).
func (js *Jumps) Ensure() (repaired bool, err error) {
	for _, j := range js.jumps {
		ok, err := js.ipt.ChainExists(j.Table, j.To)
		if err != nil {
			return repaired, fmt.Errorf("%s: check chain %q in table %s: %w", js.who, j.To, j.Table, err)
		}
		if !ok {
			if err := js.ipt.NewChain(j.Table, j.To); err != nil {
				return repaired, fmt.Errorf("%s: create chain %q in table %s: %w", js.who, j.To, j.Table, err)
			}
			repaired = true
		}
		ok, err = js.ipt.Exists(j.Table, j.From, j.Spec()...)
		if err != nil {
			return repaired, fmt.Errorf("%s: check jump %s -> %s in table %s: %w", js.who, j.From, j.To, j.Table, err)
		}
		if ok && js.first {
			moved, err := js.moveFirst(j)
			if err != nil {
				return repaired, err
			}
			repaired = repaired || moved
			continue
		}
		if !ok {
			if err := js.ipt.Insert(j.Table, j.From, 1, j.Spec()...); err != nil {
				return repaired, fmt.Errorf("%s: insert jump %s -> %s in table %s: %w", js.who, j.From, j.To, j.Table, err)
			}
			repaired = true
		}
	}
	return repaired, nil
}

// moveFirst makes j the first rule of its chain when another rule came
// above it: a new copy goes in at the top before the old one is deleted
// (by its number, checked), so the chain is never without the jump.
func (js *Jumps) moveFirst(j Jump) (bool, error) {
	rules, err := js.ipt.List(j.Table, j.From)
	if err != nil {
		return false, fmt.Errorf("%s: list chain %s of table %s: %w", js.who, j.From, j.Table, err)
	}
	// rules[0] is the policy ("-P FORWARD ACCEPT"); rules[n] is rule n.
	old := 0
	for n := 1; n < len(rules); n++ {
		if strings.HasSuffix(rules[n], " -j "+j.To) {
			old = n
			break
		}
	}
	if old == 1 {
		return false, nil
	}
	if err := js.ipt.Insert(j.Table, j.From, 1, j.Spec()...); err != nil {
		return false, fmt.Errorf("%s: insert jump %s -> %s in table %s: %w", js.who, j.From, j.To, j.Table, err)
	}
	if old == 0 {
		return true, nil
	}
	if r, err := js.ipt.ListById(j.Table, j.From, old+1); err == nil && strings.HasSuffix(r, " -j "+j.To) {
		if err := js.ipt.DeleteById(j.Table, j.From, old+1); err != nil {
			return true, fmt.Errorf("%s: delete the old jump %s -> %s in table %s: %w", js.who, j.From, j.To, j.Table, err)
		}
	}
	return true, nil
}

// Delete removes every copy of the jump rules.
func (js *Jumps) Delete() error {
	var errs []error
	for _, j := range js.jumps {
		for range 10 { // a rule inserted more than once, by older runs
			ok, err := js.ipt.Exists(j.Table, j.From, j.Spec()...)
			if err != nil {
				// The target chain is gone, so no rule can jump to it.
				break
			}
			if !ok {
				break
			}
			if err := js.ipt.Delete(j.Table, j.From, j.Spec()...); err != nil {
				errs = append(errs, fmt.Errorf("%s: delete jump %s -> %s in table %s: %w", js.who, j.From, j.To, j.Table, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// NoIPv6 reports whether this host can hold no ip6tables rules: it has no
// ip6tables, or its kernel runs without IPv6 (ipv6.disable=1). Cleanups
// skip the IPv6 family then: nothing of orch's can be there.
func NoIPv6() bool {
	if _, err := exec.LookPath("ip6tables"); err != nil {
		return true
	}
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err != nil
}
