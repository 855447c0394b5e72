package checkconfig

import (
	"fmt"
	"io"
)

// Write prints one line per result (status, name, what was found), the
// fix indented under each that is not OK, and a summary line.
func Write(w io.Writer, rs []Result) error {
	if err := writeLines(w, rs); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n"+Summary(rs))
	return err
}

// writeLines prints one line per result and the fix under each that is
// not OK.
func writeLines(w io.Writer, rs []Result) error {
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Name))
	}
	for _, r := range rs {
		if _, err := fmt.Fprintf(w, "%-8s %-*s  %s\n", r.Status, width, r.Name, r.Found); err != nil {
			return err
		}
		if r.Status != OK && r.Status != Pass && r.Fix != "" {
			if _, err := fmt.Fprintf(w, "%-8s %-*s  fix: %s\n", "", width, "", r.Fix); err != nil {
				return err
			}
		}
	}
	return nil
}

// Summary is one sentence on the results as a whole.
func Summary(rs []Result) string {
	counts := map[Status]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	s := fmt.Sprintf("%d ok, %d %s, %d missing: ", counts[OK], counts[Warning], plural(counts[Warning], "warning"), counts[Missing])
	switch {
	case counts[Missing] > 0:
		return s + "orch cannot run on this host until the missing features are fixed (see the fix under each)."
	case counts[Warning] > 0:
		return s + "orch can run on this host; the warnings say what works less well."
	default:
		return s + "this host has everything orch needs."
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
