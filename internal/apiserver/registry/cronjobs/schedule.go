package cronjobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// bounds are the limits of one schedule field and the names it accepts.
type bounds struct {
	min, max int
	names    map[string]int
}

var (
	minutes  = bounds{0, 59, nil}
	hours    = bounds{0, 23, nil}
	dom      = bounds{1, 31, nil}
	months   = bounds{1, 12, map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	dow      = bounds{0, 6, map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
	fieldSet = []bounds{minutes, hours, dom, months, dow}

	macros = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}
)

// parseSchedule checks a schedule the way the cron job controller reads it
// (robfig/cron's standard parser): five fields (minute hour day-of-month
// month day-of-week) or a macro such as @hourly or "@every 1h30m", with an
// optional TZ= or CRON_TZ= prefix. The errors read as that parser's do.
func parseSchedule(spec string) error {
	if spec == "" {
		return fmt.Errorf("empty spec string")
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		eq := strings.Index(spec, "=")
		sp := strings.Index(spec, " ")
		if sp < 0 {
			sp = len(spec)
		}
		name := spec[eq+1 : sp]
		if _, err := time.LoadLocation(name); err != nil {
			return fmt.Errorf("provided bad location %s: %v", name, err)
		}
		spec = strings.TrimSpace(spec[sp:])
	}
	if strings.HasPrefix(spec, "@") {
		return parseMacro(spec)
	}
	fields := strings.Fields(spec)
	if len(fields) != len(fieldSet) {
		return fmt.Errorf("expected exactly %d fields, found %d: %s", len(fieldSet), len(fields), fields)
	}
	for i, f := range fields {
		for _, expr := range strings.Split(f, ",") {
			if err := parseRange(expr, fieldSet[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseMacro(spec string) error {
	if macros[spec] {
		return nil
	}
	const every = "@every "
	if strings.HasPrefix(spec, every) {
		if _, err := time.ParseDuration(spec[len(every):]); err != nil {
			return fmt.Errorf("failed to parse duration %s: %s", spec, err)
		}
		return nil
	}
	return fmt.Errorf("unrecognized descriptor: %s", spec)
}

// parseRange checks one comma-separated part of a field: "*", "?", a value,
// a range "a-b", each optionally with a step "/n".
func parseRange(expr string, b bounds) error {
	rangeAndStep := strings.Split(expr, "/")
	lowHigh := strings.Split(rangeAndStep[0], "-")
	var start, end int
	if lowHigh[0] == "*" || lowHigh[0] == "?" {
		start, end = b.min, b.max
	} else {
		var err error
		if start, err = parseValue(lowHigh[0], b.names); err != nil {
			return err
		}
		switch len(lowHigh) {
		case 1:
			end = start
		case 2:
			if end, err = parseValue(lowHigh[1], b.names); err != nil {
				return err
			}
		default:
			return fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	step := 1
	switch len(rangeAndStep) {
	case 1:
	case 2:
		var err error
		if step, err = parseNumber(rangeAndStep[1]); err != nil {
			return err
		}
		if len(lowHigh) == 1 { // "n/step" runs from n to the end
			end = b.max
		}
	default:
		return fmt.Errorf("too many slashes: %s", expr)
	}
	switch {
	case start < b.min:
		return fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, b.min, expr)
	case end > b.max:
		return fmt.Errorf("end of range (%d) above maximum (%d): %s", end, b.max, expr)
	case start > end:
		return fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	case step == 0:
		return fmt.Errorf("step of range should be a positive number: %s", expr)
	}
	return nil
}

func parseValue(s string, names map[string]int) (int, error) {
	if n, ok := names[strings.ToLower(s)]; ok {
		return n, nil
	}
	return parseNumber(s)
}

func parseNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return n, nil
}
