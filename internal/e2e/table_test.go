package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// table is kubectl's column output: a header and rows of cells. kubectl
// pads columns with at least three spaces, so header names are split on two
// or more spaces ("LAST SCHEDULE" is one) and each cell is the text under
// its header, which keeps empty cells (SHORTNAMES) in their place.
type table struct {
	Header []string
	Rows   [][]string
}

var columnGap = regexp.MustCompile(`\S+( \S+)*`)

func parseTable(out string) table {
	var tb table
	var starts []int
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if tb.Header == nil {
			for _, loc := range columnGap.FindAllStringIndex(line, -1) {
				tb.Header = append(tb.Header, line[loc[0]:loc[1]])
				starts = append(starts, loc[0])
			}
			continue
		}
		row := make([]string, len(starts))
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			if start < end {
				row[i] = strings.TrimSpace(line[start:end])
			}
		}
		tb.Rows = append(tb.Rows, row)
	}
	return tb
}

// expectHeader checks the column names exactly.
func (tb table) expectHeader(t *testing.T, want ...string) {
	t.Helper()
	if strings.Join(tb.Header, " ") != strings.Join(want, " ") {
		t.Errorf("columns %q, want %q", tb.Header, want)
	}
}

// row is the row whose column col is value, or nil.
func (tb table) row(col, value string) map[string]string {
	idx := -1
	for i, h := range tb.Header {
		if h == col {
			idx = i
		}
	}
	for _, r := range tb.Rows {
		if idx >= 0 && idx < len(r) && r[idx] == value {
			m := map[string]string{}
			for i, h := range tb.Header {
				if i < len(r) {
					m[h] = r[i]
				}
			}
			return m
		}
	}
	return nil
}

// expectRow checks that the row with col=value has the given cells
// (pairs of column and value).
func (tb table) expectRow(t *testing.T, col, value string, cells ...string) {
	t.Helper()
	r := tb.row(col, value)
	if r == nil {
		t.Errorf("no row with %s=%s in %q", col, value, tb.Rows)
		return
	}
	for i := 0; i+1 < len(cells); i += 2 {
		if got := r[cells[i]]; got != cells[i+1] {
			t.Errorf("row %s=%s: %s is %q, want %q (row %v)", col, value, cells[i], got, cells[i+1], r)
		}
	}
}

// parseTables splits output with several tables (get all) at blank lines.
func parseTables(out string) []table {
	var tbs []table
	for _, part := range strings.Split(out, "\n\n") {
		if strings.TrimSpace(part) != "" {
			tbs = append(tbs, parseTable(part))
		}
	}
	return tbs
}
