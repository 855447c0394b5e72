package dns

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestForward asks each name twice and counts what reached the upstream:
// answers and denials are cached, failures are not, truncated UDP answers
// are asked again over TCP.
func TestForward(t *testing.T) {
	up := startUpstream(t)
	s, _ := startServer(t, Config{Upstreams: []string{up.addr}})
	for _, tc := range []struct {
		name    string
		qtype   uint16
		rcode   int
		answers int
		cached  bool
		asked   int // upstream questions per uncached query
		tcp     int // of which over TCP
	}{
		{"www.example.com.", dns.TypeA, dns.RcodeSuccess, 1, true, 1, 0},
		{"WWW.Example.COM.", dns.TypeA, dns.RcodeSuccess, 1, true, 1, 0}, // cached by the row above
		{"www.example.com.", dns.TypeAAAA, dns.RcodeSuccess, 0, true, 1, 0},
		{"missing.example.com.", dns.TypeA, dns.RcodeNameError, 0, true, 1, 0},
		{"zero.example.com.", dns.TypeA, dns.RcodeSuccess, 1, false, 1, 0}, // TTL 0
		{"fail.example.com.", dns.TypeA, dns.RcodeServerFailure, 0, false, 1, 0},
		{"big.example.com.", dns.TypeTXT, dns.RcodeSuccess, 40, true, 2, 1}, // truncated over UDP
	} {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(network+"/"+dns.TypeToString[tc.qtype]+"/"+tc.name, func(t *testing.T) {
				before := up.count("", tc.name, tc.qtype)
				beforeTCP := up.count("tcp", tc.name, tc.qtype)
				var r *dns.Msg
				for range 2 {
					if network == "tcp" {
						r = query(t, network, s.Addrs()[0], tc.name, tc.qtype)
					} else {
						r = queryEDNS(t, s.Addrs()[0], tc.name, tc.qtype, 4096)
					}
				}
				if r.Rcode != tc.rcode || len(r.Answer) != tc.answers {
					t.Fatalf("rcode %s with %d answers, want %s with %d\n%v", dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tc.rcode], tc.answers, r)
				}
				if r.Authoritative || !r.RecursionAvailable {
					t.Errorf("flags aa=%v ra=%v, want a non-authoritative recursive answer", r.Authoritative, r.RecursionAvailable)
				}
				for _, rr := range r.Answer {
					if rr.Header().Name != tc.name {
						t.Errorf("answer for %q, want the name as asked, %q", rr.Header().Name, tc.name)
					}
				}
				if tc.rcode == dns.RcodeNameError && (len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA) {
					t.Errorf("authority %v, want the upstream's SOA", r.Ns)
				}
				want, wantTCP := 2*tc.asked, 2*tc.tcp
				switch {
				case tc.cached && before > 0:
					want, wantTCP = 0, 0 // cached by an earlier run
				case tc.cached:
					want, wantTCP = tc.asked, tc.tcp
				}
				got := up.count("", tc.name, tc.qtype) - before
				gotTCP := up.count("tcp", tc.name, tc.qtype) - beforeTCP
				if got != want || gotTCP != wantTCP {
					t.Errorf("upstream asked %d times (%d over TCP), want %d (%d)", got, gotTCP, want, wantTCP)
				}
			})
		}
	}
}

func queryEDNS(t testing.TB, addr, name string, qtype uint16, size uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(size, false)
	c := &dns.Client{Net: "udp", Timeout: 10 * time.Second, UDPSize: size}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	return r
}

// TestForwardTruncatesForClient: an answer bigger than the client's UDP
// buffer comes back truncated over UDP and whole over TCP.
func TestForwardTruncatesForClient(t *testing.T) {
	up := startUpstream(t)
	s, _ := startServer(t, Config{Upstreams: []string{up.addr}})
	r := query(t, "udp", s.Addrs()[0], "big.example.com.", dns.TypeTXT)
	if !r.Truncated || len(r.Answer) >= 40 {
		t.Errorf("udp without EDNS: tc=%v with %d answers, want truncated", r.Truncated, len(r.Answer))
	}
	r = query(t, "tcp", s.Addrs()[0], "big.example.com.", dns.TypeTXT)
	if r.Truncated || len(r.Answer) != 40 {
		t.Errorf("tcp: tc=%v with %d answers, want all 40", r.Truncated, len(r.Answer))
	}
}

// TestForwardFailover: a dead first upstream is skipped; with every
// upstream failing the answer is SERVFAIL and the errors are counted.
func TestForwardFailover(t *testing.T) {
	up := startUpstream(t)
	dead := deadAddr(t)
	s, _ := startServer(t, Config{Upstreams: []string{dead, up.addr}, UpstreamTimeout: time.Second, MetricsAddr: "127.0.0.1:0"})
	if r := query(t, "udp", s.Addrs()[0], "www.example.com.", dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("with one live upstream: %v, want the answer", r)
	}
	if r := query(t, "udp", s.Addrs()[0], "fail.example.com.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("all upstreams failing: rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	body := scrape(t, s)
	for _, want := range []string{
		`orch_dns_forward_errors_total{upstream="` + dead + `"} 2`,
		`orch_dns_forward_errors_total{upstream="` + up.addr + `"} 1`,
		`orch_dns_requests_total{rcode="SERVFAIL",type="A"} 1`,
		`orch_dns_requests_total{rcode="NOERROR",type="A"} 1`,
		`orch_dns_cache_misses_total 2`,
		`orch_dns_request_duration_seconds_count{source="forward"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// TestForwardCoalesces: concurrent misses of one name make one upstream
// question.
func TestForwardCoalesces(t *testing.T) {
	up := startUpstream(t)
	s, _ := startServer(t, Config{Upstreams: []string{up.addr}, MetricsAddr: "127.0.0.1:0", UpstreamTimeout: hangGuard})
	const clients = 10
	replies := make(chan *dns.Msg, clients)
	for range clients {
		go func() {
			m := new(dns.Msg)
			m.SetQuestion("gated.example.com.", dns.TypeA)
			r, _, err := (&dns.Client{Timeout: hangGuard}).Exchange(m, s.Addrs()[0])
			if err != nil {
				t.Error(err)
			}
			replies <- r
		}()
	}
	// Release the upstream once every query has missed the cache.
	deadline := time.Now().Add(hangGuard)
	for !strings.Contains(scrape(t, s), fmt.Sprintf("orch_dns_cache_misses_total %d\n", clients)) {
		if time.Now().After(deadline) {
			t.Fatalf("the %d queries did not all reach the forwarder", clients)
		}
		time.Sleep(10 * time.Millisecond)
	}
	up.release()
	for range clients {
		if r := <-replies; r == nil || len(r.Answer) != 1 {
			t.Errorf("reply %v, want one A record", r)
		}
	}
	if got := up.count("", "gated.example.com.", dns.TypeA); got != 1 {
		t.Errorf("upstream asked %d times, want 1", got)
	}
}

// deadAddr is a UDP address nobody listens on.
func deadAddr(t *testing.T) string {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	return addr
}

func scrape(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsListenAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// TestCacheTTL drives the cache's clock: TTLs count down, entries expire
// with their TTL (denials with the SOA minimum) and are asked again.
func TestCacheTTL(t *testing.T) {
	up := startUpstream(t)
	var offset atomic.Int64
	base := time.Now()
	s, _ := startServerWith(t, Config{Upstreams: []string{up.addr}, MetricsAddr: "127.0.0.1:0"}, func(s *Server) {
		s.fwd.cache.now = func() time.Time { return base.Add(time.Duration(offset.Load())) }
	})
	addr := s.Addrs()[0]
	for _, tc := range []struct {
		advance  time.Duration // before the query
		name     string
		ttl      uint32 // of the first answer, or of the SOA
		upstream int    // questions for name so far
	}{
		{0, "www.example.com.", 300, 1},
		{0, "missing.example.com.", 60, 1},
		{100 * time.Second, "www.example.com.", 200, 1},
		{0, "missing.example.com.", 0, 2}, // the SOA minimum, 60s, has passed
		{199 * time.Second, "www.example.com.", 1, 1},
		{time.Second, "www.example.com.", 300, 2},
	} {
		offset.Add(int64(tc.advance))
		r := query(t, "udp", addr, tc.name, dns.TypeA)
		var ttl uint32
		switch {
		case len(r.Answer) > 0:
			ttl = r.Answer[0].Header().Ttl
		case len(r.Ns) > 0:
			ttl = r.Ns[0].(*dns.SOA).Minttl
		}
		if tc.name == "www.example.com." && ttl != tc.ttl {
			t.Errorf("after %v: %s TTL %d, want %d", time.Duration(offset.Load()), tc.name, ttl, tc.ttl)
		}
		if got := up.count("", tc.name, dns.TypeA); got != tc.upstream {
			t.Errorf("after %v: upstream asked for %s %d times, want %d", time.Duration(offset.Load()), tc.name, got, tc.upstream)
		}
	}
	if body := scrape(t, s); !strings.Contains(body, "orch_dns_cache_hits_total 2") || !strings.Contains(body, "orch_dns_cache_misses_total 4") {
		t.Errorf("want 2 cache hits and 4 misses in:\n%s", body)
	}
}

// TestCacheBounded fills a cache of 3 with 10 answers.
func TestCacheBounded(t *testing.T) {
	c := newCache(3)
	for i := range 10 {
		m := new(dns.Msg)
		name := string(rune('a'+i)) + ".example.com."
		m.SetQuestion(name, dns.TypeA)
		rr, _ := dns.NewRR(name + " 60 IN A 192.0.2.1")
		m.Answer = []dns.RR{rr}
		c.put(cacheKey{name: name, qtype: dns.TypeA}, m)
		if c.len() > 3 {
			t.Fatalf("after %d puts the cache holds %d, want at most 3", i+1, c.len())
		}
	}
	if _, ok := c.get(cacheKey{name: "j.example.com.", qtype: dns.TypeA}); !ok {
		t.Error("the last answer put is not in the cache")
	}
}

func TestCacheTTLRules(t *testing.T) {
	rr := func(s string) dns.RR { r, _ := dns.NewRR(s); return r }
	for _, tc := range []struct {
		name string
		msg  dns.Msg
		want time.Duration
	}{
		{"answer: smallest TTL", dns.Msg{Answer: []dns.RR{rr("a. 300 A 192.0.2.1"), rr("a. 30 A 192.0.2.2")}}, 30 * time.Second},
		{"answer: capped", dns.Msg{Answer: []dns.RR{rr("a. 86400 A 192.0.2.1")}}, time.Hour},
		{"nxdomain: SOA minimum", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{rr("a. 300 SOA ns. mb. 1 2 3 4 60")}}, time.Minute},
		{"nodata: SOA TTL below minimum", dns.Msg{Ns: []dns.RR{rr("a. 10 SOA ns. mb. 1 2 3 4 60")}}, 10 * time.Second},
		{"nxdomain without SOA", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}}, 0},
		{"servfail", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}}, 0},
		{"truncated", dns.Msg{MsgHdr: dns.MsgHdr{Truncated: true}, Answer: []dns.RR{rr("a. 300 A 192.0.2.1")}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cacheTTL(&tc.msg); got != tc.want {
				t.Errorf("cacheTTL = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResolvConf: nameservers that are our own listen addresses are
// skipped (they would loop), the others are used in order.
func TestResolvConf(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("10.0.0.5")}
	for _, tc := range []struct {
		name   string
		conf   string
		listen []string
		want   []string
	}{
		{"plain", "nameserver 192.0.2.53\nnameserver 2001:db8::53\n", []string{"10.42.0.1:53"}, []string{"192.0.2.53:53", "[2001:db8::53]:53"}},
		{"own address skipped", "search example.com\nnameserver 10.42.0.1\nnameserver 192.0.2.53\n", []string{"10.42.0.1:53"}, []string{"192.0.2.53:53"}},
		{"other port is not a loop", "nameserver 10.42.0.1\n", []string{"10.42.0.1:5353"}, []string{"10.42.0.1:53"}},
		{"wildcard listen covers loopback and local", "nameserver 127.0.0.53\nnameserver 10.0.0.5\nnameserver 192.0.2.53\n", []string{"0.0.0.0:53"}, []string{"192.0.2.53:53"}},
		{"only ourselves", "nameserver 127.0.0.1\n", []string{"127.0.0.1:53"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "resolv.conf")
			if err := os.WriteFile(path, []byte(tc.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			cc, err := dns.ClientConfigFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := upstreamsFrom(cc.Servers, cc.Port, tc.listen, local); !slices.Equal(got, tc.want) {
				t.Errorf("upstreams %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResolvConfReload: the forwarder reads the file at start and again
// when it changes.
func TestResolvConfReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte("nameserver 192.0.2.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newForwarder(Config{ResolvConf: path, Listen: []string{"127.0.0.1:53"}, CacheSize: 1}, newMetrics(), discard())
	if got := f.upstreams(); !slices.Equal(got, []string{"192.0.2.1:53"}) {
		t.Fatalf("upstreams %q, want [192.0.2.1:53]", got)
	}
	if err := os.WriteFile(path, []byte("nameserver 192.0.2.2\nnameserver 192.0.2.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.checked = time.Time{} // as if resolvConfCheck had passed
	f.mu.Unlock()
	if got := f.upstreams(); !slices.Equal(got, []string{"192.0.2.2:53", "192.0.2.3:53"}) {
		t.Errorf("after the change: upstreams %q, want [192.0.2.2:53 192.0.2.3:53]", got)
	}
}
