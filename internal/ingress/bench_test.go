package ingress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orch/internal/routing"
)

// BenchmarkRequests: requests per second and the 99th percentile latency
// of a small GET over keep-alive connections from 16 clients, straight to
// a backend and through the Ingress proxy to the same backend, on
// loopback (`make bench`; docs/benchmarks.md).
func BenchmarkRequests(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the backend\n")
	}))
	defer backend.Close()
	p := NewProxy(NewMetrics(), nil)
	front := httptest.NewServer(p)
	defer front.Close()
	p.SetTables(map[int]*routing.Table{portOf(b, front.URL): routing.NewTable([]*routing.Rule{
		hostRule("web.example", "default/web:80", strings.TrimPrefix(backend.URL, "http://"))}, nil)})
	for _, tc := range []struct{ name, url string }{{"direct", backend.URL}, {"ingress", front.URL}} {
		b.Run(tc.name, func(b *testing.B) { load(b, tc.url, "web.example", 16) })
	}
}

// load sends b.N requests from clients goroutines and reports req/s and
// the p99 latency.
func load(b *testing.B, url, host string, clients int) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				t0 := time.Now()
				req, _ := http.NewRequest("GET", url+"/", nil)
				req.Host = host
				resp, err := c.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}
