package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"
)

// BenchmarkBuild is the pure part alone: Input to iptables-restore text.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		in := syntheticInput(n, 2)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			var rules int
			for b.Loop() {
				rules = render(Build(in), nil, true, nil).Rules
			}
			b.ReportMetric(float64(rules), "rules")
		})
	}
}

// BenchmarkFullSync is a first sync into empty tables: Build, render and
// iptables-restore (plus the jump rules and iptables-save of a full sync),
// in the test's private network namespace.
func BenchmarkFullSync(b *testing.B) {
	requireNetns(b)
	for _, n := range []int{1000, 5000, 10000} {
		in := syntheticInput(n, 2)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			d, err := newIPTablesDriver(v1.IPv4Protocol)
			if err != nil {
				b.Fatal(err)
			}
			var res syncResult
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				flushAll(b)
				s := newSyncer(d, nil, time.Hour)
				b.StartTimer()
				if res, err = s.sync(time.Now(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(res.Rules), "rules")
			flushAll(b)
		})
	}
}

// BenchmarkPartialSync is the time from one endpoint change to its rules
// being written, on tables of 1,000, 5,000 and 10,000 services.
func BenchmarkPartialSync(b *testing.B) {
	requireNetns(b)
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchmarkPartialSync(b, n) })
	}
}

func benchmarkPartialSync(b *testing.B, n int) {
	in := syntheticInput(n, 2)
	d, err := newIPTablesDriver(v1.IPv4Protocol)
	if err != nil {
		b.Fatal(err)
	}
	flushAll(b)
	defer flushAll(b)
	s := newSyncer(d, nil, time.Hour)
	if _, err := s.sync(time.Now(), in); err != nil {
		b.Fatal(err)
	}
	ep := &in.Slices[n/2].Endpoints[0]
	addrs := []string{ep.Addresses[0], "10.250.0.1"}
	var res syncResult
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ep.Addresses = []string{addrs[(i+1)%2]}
		if res, err = s.sync(time.Now(), in); err != nil {
			b.Fatal(err)
		}
		if res.Full || res.ChainsWritten != 2 || res.ChainsDeleted != 1 {
			b.Fatalf("not a one-service partial sync: %+v", res)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(res.Rules), "rules")
}

// newNFT opens the nftables mode's table in the private namespace, empty.
func newNFT(b *testing.B) knftables.Interface {
	b.Helper()
	requireNetns(b)
	nft, err := knftables.New(knftables.IPv4Family, nftTable)
	if err != nil {
		b.Skipf("nft is not usable here (Debian: apt-get install nftables): %v", err)
	}
	deleteNFTTable(b, nft)
	return nft
}

func deleteNFTTable(b *testing.B, nft knftables.Interface) {
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(context.Background(), tx); err != nil && !knftables.IsNotFound(err) {
		b.Fatal(err)
	}
}

// BenchmarkNFTFullSync is the nftables mode's first sync into an empty
// table: NFTBuild and one `nft -f` transaction, in the private namespace.
func BenchmarkNFTFullSync(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		in := syntheticInput(n, 2)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			nft := newNFT(b)
			var res nftResult
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				deleteNFTTable(b, nft)
				s := newNFTSyncer(nft, time.Hour)
				b.StartTimer()
				var err error
				if res, err = s.sync(context.Background(), time.Now(), NFTBuild(in)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(res.Operations), "ops")
			deleteNFTTable(b, nft)
		})
	}
}

// BenchmarkNFTPartialSync is the nftables mode's time from one endpoint
// change to its rules being written.
func BenchmarkNFTPartialSync(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			in := syntheticInput(n, 2)
			nft := newNFT(b)
			defer deleteNFTTable(b, nft)
			s := newNFTSyncer(nft, time.Hour)
			if _, err := s.sync(context.Background(), time.Now(), NFTBuild(in)); err != nil {
				b.Fatal(err)
			}
			ep := &in.Slices[n/2].Endpoints[0]
			addrs := []string{ep.Addresses[0], "10.250.0.1"}
			var res nftResult
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ep.Addresses = []string{addrs[(i+1)%2]}
				var err error
				if res, err = s.sync(context.Background(), time.Now(), NFTBuild(in)); err != nil {
					b.Fatal(err)
				}
				if res.Full || res.Operations == 0 {
					b.Fatalf("not a partial sync: %+v", res)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(res.Operations), "ops")
		})
	}
}
