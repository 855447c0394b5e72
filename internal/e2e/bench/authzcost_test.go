package bench

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// BenchmarkAuthorizationCost measures what authorizing a request costs over
// HTTPS on one orch server: the get, list and create workloads (configmaps,
// JSON, 16 clients) run in short slices, alternately as the admin (group
// system:masters: no authorizer is asked) and as bench-user, whom RBAC
// allows through a ClusterRoleBinding among the bootstrap policy's (the
// Node authorizer is asked first, as for every user). The order flips each
// round (admin, user, user, admin, …), so that the machine's drift, which
// between separate server starts is larger than the difference sought,
// falls on both alike. It prints, per workload, the median rate of each and
// the median of the rounds' user/admin ratios. Knobs:
// ORCH_BENCH_AUTHZ_ROUNDS (default 8) and ORCH_BENCH_AUTHZ_SLICE_MS (1500).
func BenchmarkAuthorizationCost(b *testing.B) {
	t := startOrch(b, "")
	defer t.stop()
	userConfig, err := rbacUserConfig(t)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("authorization cost: %s, configmaps, json, %d clients, (admin and %s alternating)\n", t.name, interleavedClients, benchUser)
	interleave(b, t, "admin", "rbac", userConfig)
}

// startOrch starts an orch server for an interleaved benchmark, with
// config as its config file's contents.
func startOrch(b *testing.B, config string) *target {
	orchBin := os.Getenv("ORCH_BIN")
	if orchBin == "" {
		b.Fatal("ORCH_BIN is not set: run `make bench`, or set ORCH_BIN to a built orch binary")
	}
	t, _, err := orchKindWith(orchBin, config).start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// interleavedClients is how many clients each side of an interleaved
// benchmark runs.
const interleavedClients = 16

// interleave runs the get, list and create workloads on t in slices,
// alternately as the admin (named base) and as the client configuration
// other (named name), flipping the order each round, and prints per
// workload the median rate of each and the median of the rounds'
// other/admin ratios. Knobs: ORCH_BENCH_AUTHZ_ROUNDS (default 8) and
// ORCH_BENCH_AUTHZ_SLICE_MS (1500).
func interleave(b *testing.B, t *target, base, name string, other *rest.Config) {
	rounds := envInt("ORCH_BENCH_AUTHZ_ROUNDS", 8)
	slice := time.Duration(envInt("ORCH_BENCH_AUTHZ_SLICE_MS", 1500)) * time.Millisecond
	as := map[string][]*client{}
	var err error
	if as[base], err = newClients(t.config, interleavedClients, false); err != nil {
		b.Fatal(err)
	}
	if as[name], err = newClients(other, interleavedClients, false); err != nil {
		b.Fatal(err)
	}
	if err := setup(as[base], []resource{configMaps{}}, interleavedClients, writers); err != nil {
		b.Fatal(err)
	}
	workloads := []struct {
		name string
		op   func(tag string) opFunc
	}{
		{"get", func(string) opFunc { return opGet(configMaps{}) }},
		{"list", func(string) opFunc { return opList(configMaps{}) }},
		{"create", func(tag string) opFunc { return opCreate(configMaps{}, tag) }},
	}
	fmt.Printf("  %d rounds of %s slices\n", rounds, slice)
	fmt.Printf("  %-8s %14s %14s %16s %22s\n", "workload", base+" ops/s", name+" ops/s", name+" vs "+base, "ratios (min … max)")
	for _, w := range workloads {
		rates := map[string][]float64{}
		var ratios []float64
		for r := range rounds {
			order := []string{base, name}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			got := map[string]float64{}
			for _, who := range order {
				res := runPhase(as[who], 1<<30, slice, w.op(fmt.Sprintf("il-%s-%d", who, r)))
				if res.errors > 0 {
					b.Fatalf("%s as %s: %d errors: %v", w.name, who, res.errors, res.errMsgs)
				}
				got[who] = res.rate()
				rates[who] = append(rates[who], res.rate())
			}
			ratios = append(ratios, got[name]/got[base])
		}
		slices.Sort(ratios)
		fmt.Printf("  %-8s %14.0f %14.0f %+15.1f %% %10.2f … %.2f\n", w.name,
			medianOf(rates[base]), medianOf(rates[name]), 100*(medianOf(ratios)-1), ratios[0], ratios[len(ratios)-1])
	}
}

// medianOf is the median of xs (the mean of the middle two for an even
// count).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
