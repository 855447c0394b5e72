package dns

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNewErrors(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"no domain", Config{Listen: []string{"127.0.0.1:53"}}, "set Config.Domain"},
		{"bad domain", Config{Domain: "a..b", Listen: []string{"127.0.0.1:53"}}, "not a domain name"},
		{"no listen", Config{Domain: "cluster.local"}, "Config.Listen is empty"},
		{"listen without port", Config{Domain: "cluster.local", Listen: []string{"10.42.0.1"}}, "not host:port"},
		{"upstream without port", Config{Domain: "cluster.local", Listen: []string{"127.0.0.1:53"}, Upstreams: []string{"192.0.2.1"}}, "not host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, client, discard())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{Domain: "cluster.local", Listen: []string{"127.0.0.1:53"}}, nil, nil); err == nil {
		t.Error("New without a client: no error")
	}
}

// TestHandleEdgeCases calls the handler directly with queries a client
// library would rarely send.
func TestHandleEdgeCases(t *testing.T) {
	s, err := New(Config{Domain: "cluster.local", Listen: []string{"127.0.0.1:0"}, ResolvConf: "/nonexistent"}, fake.NewClientset(), discard())
	if err != nil {
		t.Fatal(err)
	}
	q := func(name string, qtype uint16, edit func(*dns.Msg)) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		if edit != nil {
			edit(m)
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		req   *dns.Msg
		rcode int // -1: dropped
	}{
		{"response dropped", q("a.example.", dns.TypeA, func(m *dns.Msg) { m.Response = true }), -1},
		{"notify", q("a.example.", dns.TypeSOA, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), dns.RcodeNotImplemented},
		{"no question", q("a.example.", dns.TypeA, func(m *dns.Msg) { m.Question = nil }), dns.RcodeFormatError},
		{"two questions", q("a.example.", dns.TypeA, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), dns.RcodeFormatError},
		{"EDNS version 1", q("a.example.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }), dns.RcodeBadVers},
		{"chaos class", q("version.bind.", dns.TypeTXT, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), dns.RcodeRefused},
		{"zone before sync", q("kubernetes.default.svc.cluster.local.", dns.TypeA, nil), dns.RcodeServerFailure},
		{"no upstream", q("www.example.com.", dns.TypeA, nil), dns.RcodeServerFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := s.handle(context.Background(), tc.req, false)
			if tc.rcode == -1 {
				if r != nil {
					t.Errorf("reply %v, want none", r)
				}
				return
			}
			if r == nil {
				t.Fatal("no reply")
			}
			b, err := r.Pack()
			if err != nil {
				t.Fatalf("reply does not pack: %v", err)
			}
			got := new(dns.Msg)
			if err := got.Unpack(b); err != nil {
				t.Fatal(err)
			}
			if got.Rcode != tc.rcode || got.Id != tc.req.Id || !got.Response {
				t.Errorf("rcode %s id %d response %v, want %s id %d response", dns.RcodeToString[got.Rcode], got.Id, got.Response, dns.RcodeToString[tc.rcode], tc.req.Id)
			}
		})
	}
}

// TestTruncation: a headless service with 100 endpoints does not fit a
// plain UDP answer; the client gets TC and all records over TCP.
func TestTruncation(t *testing.T) {
	var eps []ep
	for i := range 100 {
		eps = append(eps, ep{fmt.Sprintf("10.42.1.%d", i+1), "", true})
	}
	objs := []runtime.Object{
		service("ns1", "many", corev1.ClusterIPNone),
		slice("ns1", "many", "many-1", discoveryv1.AddressTypeIPv4, nil, eps...),
	}
	s, _ := startServer(t, Config{}, objs...)
	const name = "many.ns1.svc.cluster.local."
	for _, tc := range []struct {
		network   string
		edns      uint16
		truncated bool
		answers   int // at least, when truncated
	}{
		{"udp", 0, true, 1},
		{"udp", 4096, false, 100},
		{"tcp", 0, false, 100},
	} {
		t.Run(fmt.Sprintf("%s/edns%d", tc.network, tc.edns), func(t *testing.T) {
			var r *dns.Msg
			if tc.edns > 0 {
				r = queryEDNS(t, s.Addrs()[0], name, dns.TypeA, tc.edns)
			} else {
				r = query(t, tc.network, s.Addrs()[0], name, dns.TypeA)
			}
			if r.Truncated != tc.truncated || len(r.Answer) < tc.answers || (!tc.truncated && len(r.Answer) != tc.answers) {
				t.Errorf("tc=%v with %d answers, want tc=%v with %d", r.Truncated, len(r.Answer), tc.truncated, tc.answers)
			}
			r.Compress = true
			if tc.truncated && r.Len() > dns.MinMsgSize {
				t.Errorf("truncated answer is %d bytes, want at most %d", r.Len(), dns.MinMsgSize)
			}
		})
	}
}

// TestFreebind binds addresses that are on no interface, as the agent
// does before its bridge exists.
func TestFreebind(t *testing.T) {
	for _, tc := range []struct{ network, addr, loopback string }{
		{"udp4", "192.0.2.77:0", "127.0.0.1:0"}, // TEST-NET-1
		{"udp6", "[2001:db8::77]:0", "[::1]:0"}, // documentation prefix
	} {
		t.Run(tc.network, func(t *testing.T) {
			if c, err := net.ListenPacket(tc.network, tc.loopback); err != nil {
				t.Skipf("no %s on this machine: %v", tc.network, err)
			} else {
				c.Close()
			}
			if c, err := net.ListenPacket(tc.network, tc.addr); err == nil {
				c.Close()
				t.Skipf("%s is on an interface of this machine; cannot show IP_FREEBIND matters", tc.addr)
			}
			p, err := listen(context.Background(), tc.addr)
			if err != nil {
				t.Fatalf("listen with IP_FREEBIND: %v", err)
			}
			defer p.close()
			host, _, _ := net.SplitHostPort(tc.addr)
			if h, _, _ := net.SplitHostPort(p.addr()); h != host || p.tcp.Addr().String() != p.addr() {
				t.Errorf("bound udp %s tcp %s, want both on one port of %s", p.addr(), p.tcp.Addr(), host)
			}
		})
	}
}

// TestStartTwiceAndReady: /ready answers once synced; a second Start fails.
func TestStartTwiceAndReady(t *testing.T) {
	s, _ := startServer(t, Config{MetricsAddr: "127.0.0.1:0"})
	resp, err := http.Get("http://" + s.MetricsListenAddr() + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ready: %d, want 200", resp.StatusCode)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Start: %v, want an error", err)
	}
}

// TestListenInUse: Start fails with a useful error when the port is taken.
func TestListenInUse(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := New(Config{Domain: "cluster.local", Listen: []string{c.LocalAddr().String()}, ResolvConf: "/nonexistent"}, fake.NewClientset(), discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "another DNS server") {
		t.Errorf("Start on a used port: %v, want an error naming the cause", err)
	}
}
