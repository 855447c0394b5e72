// Package iptsync writes chains of one's own into iptables with partial
// syncs, for the Service proxy (internal/proxy) and the network policy
// enforcer (internal/netpol).
//
// A caller computes the desired content of every chain it owns (pure),
// and Render turns that into iptables-restore input for --noflush that
// leaves out the chains whose rules did not change since the last write
// and deletes the per-object chains that are gone. Exec applies it (each
// table one transaction) and lists a table's chains; EnsureJumps keeps the
// rules that send packets from the built-in chains to the caller's. An
// Exec or Driver works on one Family's tables, IPv4 (iptables) or IPv6
// (ip6tables): the text is the same for both, and a dual-stack caller keeps
// one Syncer per family.
//
//	text := iptsync.Render([]iptsync.Table{{Name: "filter", Chains: chains, Stale: mine}}, prev, full)
//	if err := exec.Restore(text.Data); err != nil { … }
//	prev = text.Next
package iptsync

import (
	"bytes"
	"sort"
)

// Chain is one chain and its rules, as iptables-restore lines ("-A NAME …\n").
type Chain struct {
	Name  string
	Rules string
}

// Key names one chain: filter and nat may both have one of a name.
type Key struct{ Table, Chain string }

// Written is what was last written: every chain of the caller's, with its
// rules. A partial sync leaves out every chain whose rules are the same
// (declaring a chain in iptables-restore flushes it), so a small change
// writes a few rules whatever the size of the tables.
type Written map[Key]string

// Table is the desired content of the caller's chains in one table.
type Table struct {
	Name   string // "filter", "nat"
	Chains []Chain
	// Stale reports whether a chain of that name, written before or
	// found in Existing, is one of the caller's per-object chains, to be
	// deleted when no longer in Chains. nil: none are.
	Stale func(chain string) bool
	// Existing are the chains of the table now (a full sync reads them
	// with Exec.Chains, to find stale chains a crash left behind).
	Existing []string
	// CacheHint starts large inputs of this table with a read-only "-S"
	// (see CacheHintChains).
	CacheHint bool
}

// Text is one iptables-restore input and what it changes.
type Text struct {
	Data    []byte   // empty when nothing is to be written
	Next    Written  // the chains after a successful restore
	Changed int      // chains written
	Deleted []string // stale chains removed (-X), of every table
	Rules   int      // rules in the input
}

// CacheHintChains is the number of chains in one input of a table with
// CacheHint above which Render starts the table with a read-only "-S".
// iptables-nft (1.8.9) with --noflush collects the name of every chain a
// command touches into a list it deduplicates linearly, which makes large
// inputs quadratic: 10,000 services took 94 s to restore. A command that
// names no chain makes it fetch the whole table instead, and the same
// input takes under 2 s. "-S" is such a command and changes nothing; its
// cost is listing the table as it was, so small inputs go without it.
const CacheHintChains = 500

// Render makes the iptables-restore input (for --noflush) that moves the
// caller's chains from prev to tables. With full set, every chain is
// written; otherwise only the chains that differ from prev are, and a
// table with nothing to write is left out.
func Render(tables []Table, prev Written, full bool) Text {
	var buf bytes.Buffer
	size, n := 4096, 0
	for _, t := range tables {
		n += len(t.Chains)
		for _, c := range t.Chains {
			size += len(c.Rules) + len(c.Name) + 12
		}
	}
	buf.Grow(size)
	out := Text{Next: make(Written, n)}
	for _, t := range tables {
		var decl bytes.Buffer
		var body []string
		for _, c := range t.Chains {
			key := Key{t.Name, c.Name}
			out.Next[key] = c.Rules
			if old, ok := prev[key]; !full && ok && old == c.Rules {
				continue
			}
			decl.WriteString(":" + c.Name + " - [0:0]\n")
			body = append(body, c.Rules)
		}
		var deleted []string
		if t.Stale != nil {
			deleted = staleChains(t, out.Next, prev)
			out.Deleted = append(out.Deleted, deleted...)
			for _, d := range deleted {
				decl.WriteString(":" + d + " - [0:0]\n")
			}
		}
		if !full && len(body)+len(deleted) == 0 {
			continue
		}
		out.Changed += len(body)
		buf.WriteString("*" + t.Name + "\n")
		if t.CacheHint && (full || len(body)+len(deleted) > CacheHintChains) {
			// See CacheHintChains. The listing goes to iptables-restore's
			// stdout, which Exec discards.
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
	out.Data = buf.Bytes()
	out.Rules = bytes.Count(out.Data, []byte("\n-A "))
	return out
}

// staleChains lists, sorted, the chains of t that were written (prev) or
// exist (t.Existing) and are t.Stale, but are no longer wanted (next).
func staleChains(t Table, next, prev Written) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if _, want := next[Key{t.Name, n}]; !want && t.Stale(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for k := range prev {
		if k.Table == t.Name {
			add(k.Chain)
		}
	}
	for _, n := range t.Existing {
		add(n)
	}
	sort.Strings(out)
	return out
}

// ChainsInSave returns the chain names declared in iptables-save output.
func ChainsInSave(save []byte) []string {
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

// CleanupText is the iptables-restore input that flushes and deletes the
// chains among chains of table that owned says are the caller's, and how
// many there are.
func CleanupText(table string, chains []string, owned func(string) bool) ([]byte, int) {
	var decl, del bytes.Buffer
	n := 0
	for _, c := range chains {
		if !owned(c) {
			continue
		}
		n++
		decl.WriteString(":" + c + " - [0:0]\n")
		del.WriteString("-X " + c + "\n")
	}
	hint := ""
	if n > CacheHintChains {
		hint = "-S\n" // see CacheHintChains
	}
	return []byte("*" + table + "\n" + hint + decl.String() + del.String() + "COMMIT\n"), n
}
