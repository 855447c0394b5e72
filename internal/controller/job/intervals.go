package job

import (
	"slices"
	"strconv"
	"strings"
)

// interval is a closed range of completion indexes, first..last.
type interval struct{ first, last int }

// intervals is a set of completion indexes kept as sorted, disjoint,
// non-adjacent ranges: the form of status.completedIndexes and
// status.failedIndexes ("0-2,5,7,8").
type intervals []interval

// parseIntervals reads an index list such as "1,3-5", keeping only indexes
// below completions. Malformed parts are skipped: the string comes from a
// status anyone with write access may have changed.
func parseIntervals(s string, completions int) intervals {
	if s == "" {
		return nil
	}
	var out intervals
	for _, part := range strings.Split(s, ",") {
		bounds := strings.SplitN(part, "-", 2)
		first, err := strconv.Atoi(bounds[0])
		if err != nil || first < 0 || first >= completions {
			continue
		}
		last := first
		if len(bounds) == 2 {
			if last, err = strconv.Atoi(bounds[1]); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		out = append(out, interval{first, last})
	}
	return out.merge(nil)
}

// with returns the set plus the given indexes.
func (iv intervals) with(indexes ...int) intervals {
	add := make(intervals, len(indexes))
	for i, ix := range indexes {
		add[i] = interval{ix, ix}
	}
	return iv.merge(add)
}

// merge returns the union of two sets.
func (iv intervals) merge(other intervals) intervals {
	all := append(slices.Clone(iv), other...)
	slices.SortFunc(all, func(a, b interval) int { return a.first - b.first })
	var out intervals
	for _, cur := range all {
		if n := len(out); n > 0 && cur.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, cur.last)
			continue
		}
		out = append(out, cur)
	}
	return out
}

// total is how many indexes the set holds.
func (iv intervals) total() int {
	n := 0
	for _, v := range iv {
		n += v.last - v.first + 1
	}
	return n
}

// has reports whether ix is in the set.
func (iv intervals) has(ix int) bool {
	i, _ := slices.BinarySearchFunc(iv, ix, func(v interval, ix int) int { return v.last - ix })
	return i < len(iv) && iv[i].first <= ix
}

// String writes the set as upstream does: a range of two is "4,5", longer
// ones "4-7".
func (iv intervals) String() string {
	var b strings.Builder
	for _, v := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v.first))
		switch {
		case v.last == v.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(v.last))
		case v.last > v.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(v.last))
		}
	}
	return b.String()
}
