package bench

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
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
	orchBin := os.Getenv("ORCH_BIN")
	if orchBin == "" {
		b.Fatal("ORCH_BIN is not set: run `make bench`, or set ORCH_BIN to a built orch binary")
	}
	rounds := envInt("ORCH_BENCH_AUTHZ_ROUNDS", 8)
	slice := time.Duration(envInt("ORCH_BENCH_AUTHZ_SLICE_MS", 1500)) * time.Millisecond
	const clients = 16

	t, _, err := orchKind(orchBin).start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer t.stop()
	userConfig, err := rbacUserConfig(t)
	if err != nil {
		b.Fatal(err)
	}
	as := map[string][]*client{}
	if as["admin"], err = newClients(t.config, clients, false); err != nil {
		b.Fatal(err)
	}
	if as["rbac"], err = newClients(userConfig, clients, false); err != nil {
		b.Fatal(err)
	}
	if err := setup(as["admin"], []resource{configMaps{}}, clients, writers); err != nil {
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
	fmt.Printf("authorization cost: %s, configmaps, json, %d clients, %d rounds of %s slices (admin and %s alternating)\n",
		t.name, clients, rounds, slice, benchUser)
	fmt.Printf("  %-8s %14s %14s %16s %22s\n", "workload", "admin ops/s", "rbac ops/s", "rbac vs admin", "ratios (min … max)")
	for _, w := range workloads {
		rates := map[string][]float64{}
		var ratios []float64
		for r := range rounds {
			order := []string{"admin", "rbac"}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			got := map[string]float64{}
			for _, who := range order {
				res := runPhase(as[who], 1<<30, slice, w.op(fmt.Sprintf("authz-%s-%d", who, r)))
				if res.errors > 0 {
					b.Fatalf("%s as %s: %d errors: %v", w.name, who, res.errors, res.errMsgs)
				}
				got[who] = res.rate()
				rates[who] = append(rates[who], res.rate())
			}
			ratios = append(ratios, got["rbac"]/got["admin"])
		}
		slices.Sort(ratios)
		fmt.Printf("  %-8s %14.0f %14.0f %+15.1f %% %10.2f … %.2f\n", w.name,
			medianOf(rates["admin"]), medianOf(rates["rbac"]), 100*(medianOf(ratios)-1), ratios[0], ratios[len(ratios)-1])
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
