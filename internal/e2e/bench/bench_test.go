package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Knobs, from the environment. The defaults keep one server's run near two
// minutes on two cores.
var (
	starts     = envInt("ORCH_BENCH_STARTS", 5) // fresh starts timed to /readyz
	phaseTime  = time.Duration(envInt("ORCH_BENCH_PHASE_MS", 3000)) * time.Millisecond
	phaseOps   = envInt("ORCH_BENCH_PHASE_OPS", 20000) // cap on operations per phase
	clientSets = []int{1, 16, 64}
	writers    = 4 // writers during the watch phases
	// ORCH_BENCH_ONLY, a regexp, runs only the phases whose key
	// (workload/format/clients) matches.
	only = envRegexp("ORCH_BENCH_ONLY")
)

func envRegexp(name string) *regexp.Regexp {
	if v := os.Getenv(name); v != "" {
		return regexp.MustCompile(v)
	}
	return nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// phases is the API table, in the order the phases run. Reads come before
// the creates, so that get and list see the same store on every server (the
// creates leave as many objects as each server could make); the last row
// lists again once the creates have filled another namespace. The "cr" rows
// drive the bench's custom resource (widgets.go) instead of configmaps, each
// right after its configmap rows so that both meet the same store.
func phases() []phase {
	var out []phase
	add := func(workload string, formats ...string) {
		for _, f := range formats {
			for _, c := range clientSets {
				out = append(out, phase{workload, f, c})
			}
		}
	}
	add("get", "json", "protobuf")
	add("cr get", "json")
	add("list", "json")
	add("list limit=100", "json")
	add("cr list", "json")
	add("create", "json", "protobuf")
	add("cr create", "json")
	add("update", "json")
	add("cr update", "json")
	add("watch", "json")
	add("cr watch", "json")
	return append(out, phase{"list after creates", "json", 1})
}

// resourceOf splits a phase's workload into the resource it drives (the
// custom resource for "cr " rows, else configmaps) and the workload proper.
func resourceOf(workload string) (resource, string) {
	if w, ok := strings.CutPrefix(workload, "cr "); ok {
		return widgets{}, w
	}
	return configMaps{}, workload
}

// BenchmarkServer measures ORCH_BIN (and the upstream peer when
// KUBE_APISERVER_BIN and ETCD_BIN are set) and prints the tables once,
// whatever b.N is. ORCH_BENCH_JSON names a file for the figures as JSON.
func BenchmarkServer(b *testing.B) {
	orchBin := os.Getenv("ORCH_BIN")
	if orchBin == "" {
		b.Fatal("ORCH_BIN is not set: run `make bench`, or set ORCH_BIN to a built orch binary")
	}
	if benchAs != "" && benchAs != "rbac" {
		b.Fatalf("ORCH_BENCH_AS is %q: leave it empty (admin) or set it to rbac", benchAs)
	}
	// ORCH_BENCH_CONFIG is YAML for orch's config file (e.g.
	// "gateway-api: true"), to measure an option's cost.
	kinds := []kind{orchKindWith(orchBin, os.Getenv("ORCH_BENCH_CONFIG"))}
	kas, etcd := os.Getenv("KUBE_APISERVER_BIN"), os.Getenv("ETCD_BIN")
	if kas != "" && etcd != "" {
		kinds = append(kinds, peerKind(kas, etcd))
	} else {
		fmt.Println("no peer: set KUBE_APISERVER_BIN and ETCD_BIN (see internal/e2e/bench/build-peer.sh) for a kube-apiserver column")
	}
	ps := phases()
	var reports []*report
	for _, k := range kinds {
		fmt.Printf("measuring %s …\n", k.name)
		reports = append(reports, measure(b, k, ps))
	}
	printReports(os.Stdout, ps, reports)
	if path := os.Getenv("ORCH_BENCH_JSON"); path != "" {
		all := map[string]map[string]float64{}
		for _, r := range reports {
			all[r.name] = r.metrics()
		}
		data, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Errorf("write %s: %v", path, err)
		}
	}
	for _, r := range reports {
		if r.err != nil {
			b.Errorf("%s: %v", r.name, r.err)
		}
	}
}

// measure times the starts of k, then runs the API phases on one fresh
// server, sampling its memory.
func measure(b *testing.B, k kind, ps []phase) *report {
	r := &report{name: k.name, results: map[string]result{}}
	for i := range starts {
		dir := b.TempDir()
		t, took, err := k.start(dir)
		if err != nil {
			r.err = fmt.Errorf("fresh start %d: %w", i+1, err)
			return r
		}
		r.fresh = append(r.fresh, took)
		t.stop()
		t, took, err = k.start(dir)
		if err != nil {
			r.err = fmt.Errorf("restart %d: %w", i+1, err)
			return r
		}
		r.restart = append(r.restart, took)
		t.stop()
		os.RemoveAll(dir) // etcd preallocates 64 MB of WAL per data dir
	}

	t, _, err := k.start(b.TempDir())
	if err != nil {
		r.err = fmt.Errorf("start for the API phases: %w", err)
		return r
	}
	defer t.stop()
	time.Sleep(3 * time.Second) // let start-up work settle before "idle"
	groups := memGroups(t)
	for i := range groups {
		groups[i].row.idleStart = memoryOf(groups[i].procs)
		groups[i].sampler = startSampler(groups[i].procs)
	}
	r.err = runPhases(t, ps, r)
	for i := range groups {
		groups[i].row.peak = groups[i].sampler.stop()
	}
	time.Sleep(5 * time.Second) // idle again
	for _, g := range groups {
		g.row.idleAfter = memoryOf(g.procs)
		r.mem = append(r.mem, *g.row)
	}
	r.logErrorCount, r.logErrors = scanLogs(t.procs)
	return r
}

type memGroup struct {
	row     *memRow
	procs   []*proc
	sampler *sampler
}

// memGroups is each process of t, plus their sum when there are several.
func memGroups(t *target) []memGroup {
	var gs []memGroup
	for _, p := range t.procs {
		gs = append(gs, memGroup{row: &memRow{name: p.name}, procs: []*proc{p}})
	}
	if len(t.procs) > 1 {
		gs = append(gs, memGroup{row: &memRow{name: t.name}, procs: t.procs})
	}
	return gs
}

// runPhases makes the clients and the objects, then runs every phase. The
// objects are made as the admin; the phases run as identity().
func runPhases(t *target, ps []phase, r *report) error {
	maxClients := clientSets[len(clientSets)-1]
	config := t.config
	if benchAs == "rbac" {
		var err error
		if config, err = rbacUserConfig(t); err != nil {
			return err
		}
	}
	jsonClients, err := newClients(config, maxClients, false)
	if err != nil {
		return err
	}
	protoClients, err := newClients(config, maxClients, true)
	if err != nil {
		return err
	}
	writerClients, err := newClients(config, writers, false)
	if err != nil {
		return err
	}
	admins := jsonClients[:min(16, maxClients)]
	if config != t.config {
		if admins, err = newClients(t.config, len(admins), false); err != nil {
			return err
		}
	}
	if err := makeWidgetCRD(t.config); err != nil {
		return err
	}
	resources := []resource{configMaps{}, widgets{}}
	if err := setup(admins, resources, maxClients, writers); err != nil {
		return err
	}
	upd := map[resource]*updater{}
	for _, res := range resources {
		upd[res] = newUpdater(res, nsUpdate, "u-", maxClients)
	}
	created := map[resource]int{} // objects the create phases made
	for _, p := range ps {
		if only != nil && !only.MatchString(p.key()) {
			continue
		}
		clients := jsonClients[:p.clients]
		if p.format == "protobuf" {
			clients = protoClients[:p.clients]
		}
		objs, workload := resourceOf(p.workload)
		switch workload {
		case "create":
			res := runPhase(clients, phaseOps, phaseTime, opCreate(objs, fmt.Sprintf("c-%s-%d", p.format, p.clients)))
			created[objs] += res.ops
			r.results[p.key()] = res
		case "get":
			r.results[p.key()] = runPhase(clients, phaseOps, phaseTime, opGet(objs))
		case "update":
			r.results[p.key()] = runPhase(clients, phaseOps, phaseTime, upd[objs].op)
		case "list", "list after creates":
			res := runPhase(clients, phaseOps, phaseTime, opList(objs))
			res.note = fmt.Sprintf("%d %s in %s, %d in the store", listObjects, objs, nsList, listObjects+created[objs]+maxClients+writers)
			r.results[p.key()] = res
		case "list limit=100":
			r.results[p.key()] = runPhase(clients, phaseOps, phaseTime, newPager(objs, p.clients).op)
		case "watch":
			r.results[p.key()] = runWatch(objs, clients, writerClients, phaseTime)
		default:
			return fmt.Errorf("phase %s: no workload %q", p.key(), workload)
		}
		res := r.results[p.key()]
		fmt.Printf("  %-26s %8.0f ops/s  p50 %7.2f ms  p99 %8.2f ms  errors %d\n",
			fmt.Sprintf("%s %s %d", p.workload, p.format, p.clients), res.rate(), ms(res.quantile(0.5)), ms(res.quantile(0.99)), res.errors)
		for _, pr := range t.procs {
			if pr.exited() {
				return fmt.Errorf("%s exited during %s (%s); last log lines:\n%s", pr.name, p.key(), pr.cmd.ProcessState, pr.tail(15))
			}
		}
	}
	return nil
}
