package podconfig

import (
	"errors"
	"fmt"
	"strings"
)

// MaxResolvConfSize is the size from which upstream's kubelet refuses a
// resolv.conf (10 MiB): ParseResolvConf fails on data this long or longer.
const MaxResolvConfSize = 10 << 20

// HostResolv is the node's resolver configuration, the base of the pods'
// DNS (the kubelet's --resolv-conf, normally /etc/resolv.conf), as
// ParseResolvConf reads it.
type HostResolv struct {
	// Nameservers are the addresses of the "nameserver" lines, in order
	// (not checked to be IPs, as upstream does not).
	Nameservers []string
	// Searches are the domains of the last "search" line, each without
	// one trailing dot, a lone "." left out.
	Searches []string
	// Options are the "options" of every line, one per name: a later
	// option of the same name (the part before ':') replaces an earlier
	// one in its place.
	Options []string
}

// ParseResolvConf reads resolv.conf content with upstream kubelet's
// rules, which are not quite glibc's:
//
//   - a line whose first non-blank character is '#' is a comment; other
//     lines are split into blank-separated fields, and lines whose first
//     field is not a keyword below (";" comments among them) are ignored;
//   - "nameserver ADDR" lines accumulate (fields after ADDR are ignored);
//     a nameserver line without an address is an error;
//   - the last "search" line wins, even an empty one; "domain" lines are
//     ignored;
//   - "options" from all lines are merged by name.
//
// On error it still returns what it parsed, as upstream does; the
// kubelet then fails the pod's sandbox rather than use it.
func ParseResolvConf(data []byte) (HostResolv, error) {
	r := HostResolv{Nameservers: []string{}, Searches: []string{}, Options: []string{}}
	if len(data) >= MaxResolvConfSize {
		return r, fmt.Errorf("resolv.conf is %d bytes, more than the %d the kubelet reads", len(data), MaxResolvConfSize-1)
	}
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, fmt.Errorf("resolv.conf line %d: nameserver without an address", i+1))
				continue
			}
			r.Nameservers = append(r.Nameservers, f[1])
		case "search":
			r.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					r.Searches = append(r.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			r.Options = mergeOptions(r.Options, f[1:])
		}
	}
	return r, errors.Join(errs...)
}

// optionName is the name of a resolver option: what comes before the
// first ':' ("ndots" in "ndots:5").
func optionName(o string) string {
	name, _, _ := strings.Cut(o, ":")
	return name
}

// mergeOptions merges options into existing, one per name: an option
// whose name is already there replaces it in its place, others are
// appended. (Upstream merges through a map, so its order is random.)
func mergeOptions(existing, options []string) []string {
	out := make([]string, 0, len(existing)+len(options))
	at := make(map[string]int, len(existing)+len(options))
	for _, list := range [][]string{existing, options} {
		for _, o := range list {
			name := optionName(o)
			if i, ok := at[name]; ok {
				out[i] = o
				continue
			}
			at[name] = len(out)
			out = append(out, o)
		}
	}
	return out
}
