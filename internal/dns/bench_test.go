package dns

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// benchClients is the number of concurrent UDP clients.
const benchClients = 8

// BenchmarkQuery measures queries per second and the 99th percentile
// latency over UDP with benchClients concurrent clients (each one socket,
// one query in flight), for a cluster name and for an outside name
// answered from the cache. Clients and server share the machine.
func BenchmarkQuery(b *testing.B) {
	up := startUpstream(b)
	s, _ := startServer(b, Config{Upstreams: []string{up.addr}}, clusterObjects()...)
	addr := s.Addrs()[0]
	for _, bc := range []struct {
		name, qname string
	}{
		{"cluster", "web.ns1.svc.cluster.local."},
		{"cached-outside", "www.example.com."},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if r := query(b, "udp", addr, bc.qname, dns.TypeA); len(r.Answer) != 1 {
				b.Fatalf("warm-up: %v", r)
			}
			asked := up.count("", bc.qname, dns.TypeA)
			var mu sync.Mutex
			var all []time.Duration
			b.SetParallelism(max(1, benchClients/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				co, err := (&dns.Client{Net: "udp"}).Dial(addr)
				if err != nil {
					b.Error(err)
					return
				}
				defer co.Close()
				m := new(dns.Msg)
				m.SetQuestion(bc.qname, dns.TypeA)
				lat := make([]time.Duration, 0, 1024)
				for pb.Next() {
					m.Id = dns.Id()
					start := time.Now()
					co.SetDeadline(start.Add(5 * time.Second))
					if err := co.WriteMsg(m); err != nil {
						b.Error(err)
						return
					}
					r, err := co.ReadMsg()
					if err != nil {
						b.Error(err)
						return
					}
					lat = append(lat, time.Since(start))
					if r.Id != m.Id || len(r.Answer) != 1 {
						b.Errorf("reply %v", r)
						return
					}
				}
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			})
			b.StopTimer()
			if got := up.count("", bc.qname, dns.TypeA); got != asked {
				b.Errorf("upstream asked %d times during the benchmark, want 0 (cached)", got-asked)
			}
			if len(all) == 0 {
				return
			}
			slices.Sort(all)
			p99 := all[min(len(all)-1, len(all)*99/100)]
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "qps")
			b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
