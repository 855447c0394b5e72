package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// phase is one row of the API table.
type phase struct {
	workload string // create, get, update, list, list limit=100, watch; "cr get" etc. for the custom resource
	format   string // json or protobuf
	clients  int    // concurrent clients (watchers for watch)
}

func (p phase) key() string { return fmt.Sprintf("%s/%s/%d", p.workload, p.format, p.clients) }

// memRow is the memory of one process (or the sum of a target's processes).
type memRow struct {
	name                       string
	idleStart, peak, idleAfter Memory
}

// report is everything measured on one kind of server.
type report struct {
	name           string
	fresh, restart []time.Duration
	mem            []memRow
	results        map[string]result
	logErrors      []string // a few error lines from the server's logs
	logErrorCount  int
	err            error // why the run stopped early, if it did
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startFigure is "median [min–max]" in seconds.
func startFigure(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	s := slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("%.2f s [%.2f–%.2f]", median(s).Seconds(), s[0].Seconds(), s[len(s)-1].Seconds())
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// printReports writes the readable tables, one column group per server.
func printReports(w io.Writer, phases []phase, reports []*report) {
	fmt.Fprintf(w, "\n== Start: process start to /readyz 200 (median [min–max] of %d) ==\n", len(reports[0].fresh))
	fmt.Fprintf(w, "%-28s", "")
	for _, r := range reports {
		fmt.Fprintf(w, "%-28s", r.name)
	}
	fmt.Fprintf(w, "\n%-28s", "fresh data dir")
	for _, r := range reports {
		fmt.Fprintf(w, "%-28s", startFigure(r.fresh))
	}
	fmt.Fprintf(w, "\n%-28s", "restart, same data dir")
	for _, r := range reports {
		fmt.Fprintf(w, "%-28s", startFigure(r.restart))
	}

	fmt.Fprintf(w, "\n\n== Memory in MiB: VmRSS = RssAnon + RssFile(+RssShmem), from /proc/PID/status ==\n")
	fmt.Fprintf(w, "%-22s %-20s %-20s %-20s\n", "process", "idle after start", "peak under load", "idle after load")
	fmt.Fprintf(w, "%-22s %-20s %-20s %-20s\n", "", "rss / anon / file", "rss / anon / file", "rss / anon / file")
	for _, r := range reports {
		for _, m := range r.mem {
			fmt.Fprintf(w, "%-22s %-20s %-20s %-20s\n", m.name, memFigure(m.idleStart), memFigure(m.peak), memFigure(m.idleAfter))
		}
	}

	fmt.Fprintf(w, "\n== API, run as %s: configmaps (cr rows: %s, a custom resource, through the dynamic client) with a %d-byte payload; ops/s, p50 and p99 latency in ms, errors ==\n", identity(), widgetsGVR.GroupResource(), payloadSize)
	fmt.Fprintf(w, "%-28s", "workload / format / clients")
	for _, r := range reports {
		fmt.Fprintf(w, " | %-34s", r.name)
	}
	fmt.Fprintln(w)
	for _, p := range phases {
		fmt.Fprintf(w, "%-28s", fmt.Sprintf("%s %s %d", p.workload, p.format, p.clients))
		for _, r := range reports {
			res, ok := r.results[p.key()]
			if !ok {
				fmt.Fprintf(w, " | %-34s", "not run")
				continue
			}
			fmt.Fprintf(w, " | %9.0f %7.2f %8.2f %6d", res.rate(), ms(res.quantile(0.50)), ms(res.quantile(0.99)), res.errors)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "(watch: ops/s is events delivered per second to all watchers together; latency is from sending a write to a watcher receiving its event)")

	for _, r := range reports {
		fmt.Fprintf(w, "\n== Notes: %s ==\n", r.name)
		if r.err != nil {
			fmt.Fprintf(w, "run stopped early: %v\n", r.err)
		}
		for _, p := range phases {
			res, ok := r.results[p.key()]
			if !ok {
				continue
			}
			if res.note != "" {
				fmt.Fprintf(w, "%s: %s\n", p.key(), res.note)
			}
			for _, msg := range sortedKeys(res.errMsgs) {
				fmt.Fprintf(w, "%s: error ×%d: %s\n", p.key(), res.errMsgs[msg], msg)
			}
		}
		fmt.Fprintf(w, "error lines in the server logs: %d\n", r.logErrorCount)
		for _, line := range r.logErrors {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

func memFigure(m Memory) string {
	return fmt.Sprintf("%.0f / %.0f / %.0f", mib(m.RSS), mib(m.Anon), mib(m.File))
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metrics flattens a report into name → value, for ORCH_BENCH_JSON.
func (r *report) metrics() map[string]float64 {
	out := map[string]float64{}
	if len(r.fresh) > 0 {
		out["start/fresh_s"] = median(slices.Sorted(slices.Values(r.fresh))).Seconds()
	}
	if len(r.restart) > 0 {
		out["start/restart_s"] = median(slices.Sorted(slices.Values(r.restart))).Seconds()
	}
	for _, m := range r.mem {
		for when, v := range map[string]Memory{"idle_start": m.idleStart, "peak": m.peak, "idle_after": m.idleAfter} {
			out["mem/"+m.name+"/"+when+"/rss_mib"] = mib(v.RSS)
			out["mem/"+m.name+"/"+when+"/anon_mib"] = mib(v.Anon)
			out["mem/"+m.name+"/"+when+"/file_mib"] = mib(v.File)
		}
	}
	for k, res := range r.results {
		out["api/"+k+"/ops_s"] = res.rate()
		out["api/"+k+"/p50_ms"] = ms(res.quantile(0.50))
		out["api/"+k+"/p99_ms"] = ms(res.quantile(0.99))
		out["api/"+k+"/errors"] = float64(res.errors)
	}
	return out
}

// errorLine matches error lines of slog (orch), klog (kube-apiserver) and zap
// (etcd) output.
var errorLine = regexp.MustCompile(`level=ERROR|^E\d{4} |"level":"(error|panic|fatal)"|panic:`)

// scanLogs counts error lines in the logs of procs and keeps the first few.
func scanLogs(procs []*proc) (count int, sample []string) {
	for _, p := range procs {
		f, err := os.Open(p.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); errorLine.MatchString(line) {
				count++
				if len(sample) < 5 {
					sample = append(sample, p.name+": "+strings.TrimSpace(line)[:min(300, len(strings.TrimSpace(line)))])
				}
			}
		}
		f.Close()
	}
	return count, sample
}
