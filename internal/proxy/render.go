package proxy

import (
	"bytes"
	"sort"
)

// written is what the proxy last wrote to the nat table: per-service chain
// name → its rules. A partial sync leaves out every chain whose rules are
// the same (declaring a chain in iptables-restore flushes it).
type written map[string]string

// restoreText is one iptables-restore input and what it changes.
type restoreText struct {
	data    []byte
	next    written  // the per-service chains after a successful restore
	changed int      // per-service chains written
	deleted []string // per-service chains removed (-X)
	rules   int      // rules in the input
}

// cacheHintChains is the number of per-service chains in one input above
// which render starts the nat table with a read-only "-S". iptables-nft
// (1.8.9) with --noflush collects the name of every chain a command
// touches into a list it deduplicates linearly, which makes large inputs
// quadratic: 10,000 services took 94 s to restore. A command that names no
// chain makes it fetch the whole table instead, and the same input takes
// under 2 s. "-S" is such a command and changes nothing; its cost is
// listing the table as it was, so small inputs go without it.
const cacheHintChains = 500

// render makes the iptables-restore input (for --noflush) that moves the
// proxy's chains from prev to rs. With full set, every chain is written and
// existing (the nat chains iptables-save shows now) is searched for stale
// per-service chains too; otherwise only the per-service chains that
// differ from prev are written. The fixed chains are always written.
func render(rs *Ruleset, prev written, full bool, existing []string) restoreText {
	var buf bytes.Buffer
	size := 4096
	for _, cs := range [][]Chain{rs.Filter, rs.NAT} {
		for _, c := range cs {
			size += len(c.Rules) + len(c.Name) + 12
		}
	}
	buf.Grow(size)
	out := restoreText{next: make(written, len(rs.NAT))}
	table := func(name string, chains []Chain, partial bool) {
		buf.WriteString("*" + name + "\n")
		mark := buf.Len()
		var body []string
		for _, c := range chains {
			if isServiceChain(c.Name) {
				out.next[c.Name] = c.Rules
				if old, ok := prev[c.Name]; partial && ok && old == c.Rules {
					continue
				}
				out.changed++
			}
			buf.WriteString(":" + c.Name + " - [0:0]\n")
			body = append(body, c.Rules)
		}
		if name == "nat" {
			out.deleted = staleChains(out.next, prev, existing)
			for _, d := range out.deleted {
				buf.WriteString(":" + d + " - [0:0]\n")
			}
		}
		if name == "nat" && (full || out.changed+len(out.deleted) > cacheHintChains) {
			// See cacheHintChains. The listing goes to iptables-restore's
			// stdout, which the driver discards.
			tail := append([]byte(nil), buf.Bytes()[mark:]...)
			buf.Truncate(mark)
			buf.WriteString("-S\n")
			buf.Write(tail)
		}
		for _, r := range body {
			buf.WriteString(r)
		}
		if name == "nat" {
			for _, d := range out.deleted {
				buf.WriteString("-X " + d + "\n")
			}
		}
		buf.WriteString("COMMIT\n")
	}
	table("filter", rs.Filter, false)
	table("nat", rs.NAT, !full)
	out.data = buf.Bytes()
	out.rules = bytes.Count(out.data, []byte("\n-A "))
	return out
}

// staleChains lists, sorted, the per-service chains that were written
// (prev) or exist (existing) but are no longer wanted (next).
func staleChains(next, prev written, existing []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if _, want := next[n]; !want && isServiceChain(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for n := range prev {
		add(n)
	}
	for _, n := range existing {
		add(n)
	}
	sort.Strings(out)
	return out
}

// chainsInSave returns the chain names declared in iptables-save output.
func chainsInSave(save []byte) []string {
	var out []string
	for _, line := range bytes.Split(save, []byte("\n")) {
		if len(line) > 1 && line[0] == ':' {
			if i := bytes.IndexByte(line, ' '); i > 1 {
				out = append(out, string(line[1:i]))
			}
		}
	}
	return out
}
