package proxy

import (
	"bytes"
	"sort"
)

// chainKey names one chain: filter and nat both have a KUBE-SERVICES.
type chainKey struct{ table, chain string }

// written is what the proxy last wrote: every chain of its own, fixed and
// per-service, with its rules. A partial sync leaves out every chain whose
// rules are the same (declaring a chain in iptables-restore flushes it), so
// an endpoint change writes a few rules whatever the number of Services.
type written map[chainKey]string

// restoreText is one iptables-restore input and what it changes.
type restoreText struct {
	data    []byte   // empty when nothing is to be written
	next    written  // the chains after a successful restore
	changed int      // chains written
	deleted []string // per-service nat chains removed (-X)
	rules   int      // rules in the input
}

// cacheHintChains is the number of chains in one nat input above which
// render starts the table with a read-only "-S". iptables-nft (1.8.9) with
// --noflush collects the name of every chain a command touches into a list
// it deduplicates linearly, which makes large inputs quadratic: 10,000
// services took 94 s to restore. A command that names no chain makes it
// fetch the whole table instead, and the same input takes under 2 s. "-S"
// is such a command and changes nothing; its cost is listing the table as
// it was, so small inputs go without it.
const cacheHintChains = 500

// render makes the iptables-restore input (for --noflush) that moves the
// proxy's chains from prev to rs. With full set, every chain is written and
// existing (the nat chains iptables-save shows now) is searched for stale
// per-service chains too; otherwise only the chains that differ from prev
// are written, and a table with nothing to write is left out.
func render(rs *Ruleset, prev written, full bool, existing []string) restoreText {
	var buf bytes.Buffer
	size := 4096
	for _, cs := range [][]Chain{rs.Filter, rs.NAT} {
		for _, c := range cs {
			size += len(c.Rules) + len(c.Name) + 12
		}
	}
	buf.Grow(size)
	out := restoreText{next: make(written, len(rs.Filter)+len(rs.NAT))}
	table := func(name string, chains []Chain) {
		var decl bytes.Buffer
		var body []string
		for _, c := range chains {
			key := chainKey{name, c.Name}
			out.next[key] = c.Rules
			if old, ok := prev[key]; !full && ok && old == c.Rules {
				continue
			}
			decl.WriteString(":" + c.Name + " - [0:0]\n")
			body = append(body, c.Rules)
		}
		var deleted []string
		if name == "nat" {
			deleted = staleChains(out.next, prev, existing)
			out.deleted = deleted
			for _, d := range deleted {
				decl.WriteString(":" + d + " - [0:0]\n")
			}
		}
		if !full && len(body)+len(deleted) == 0 {
			return
		}
		out.changed += len(body)
		buf.WriteString("*" + name + "\n")
		if name == "nat" && (full || len(body)+len(deleted) > cacheHintChains) {
			// See cacheHintChains. The listing goes to iptables-restore's
			// stdout, which the driver discards.
			buf.WriteString("-S\n")
		}
		buf.Write(decl.Bytes())
		for _, r := range body {
			buf.WriteString(r)
		}
		for _, d := range deleted {
			buf.WriteString("-X " + d + "\n")
		}
		buf.WriteString("COMMIT\n")
	}
	table("filter", rs.Filter)
	table("nat", rs.NAT)
	out.data = buf.Bytes()
	out.rules = bytes.Count(out.data, []byte("\n-A "))
	return out
}

// staleChains lists, sorted, the per-service nat chains that were written
// (prev) or exist (existing) but are no longer wanted (next).
func staleChains(next, prev written, existing []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if _, want := next[chainKey{"nat", n}]; !want && isServiceChain(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for k := range prev {
		if k.table == "nat" {
			add(k.chain)
		}
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
