package dns

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// hangGuard bounds waits for things that must happen eventually; it is a
// guard against hanging, not a speed assertion.
const hangGuard = 30 * time.Second

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer runs a Server for cfg (Domain, Listen defaulted) on a fake
// clientset holding objs, and waits until it is ready.
func startServer(t testing.TB, cfg Config, objs ...runtime.Object) (*Server, *fake.Clientset) {
	t.Helper()
	return startServerWith(t, cfg, nil, objs...)
}

// startServerWith is startServer with setup run on the Server before Start.
func startServerWith(t testing.TB, cfg Config, setup func(*Server), objs ...runtime.Object) (*Server, *fake.Clientset) {
	t.Helper()
	if cfg.Domain == "" {
		cfg.Domain = "cluster.local"
	}
	if cfg.Listen == nil {
		cfg.Listen = []string{"127.0.0.1:0"}
	}
	if cfg.Upstreams == nil && cfg.ResolvConf == "" {
		cfg.ResolvConf = "/nonexistent/resolv.conf"
	}
	client := fake.NewClientset(objs...)
	s, err := New(cfg, client, discard())
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-errc:
		t.Fatalf("Start returned before ready: %v", err)
	case <-time.After(hangGuard):
		t.Fatal("server not ready")
	}
	return s, client
}

// query asks addr over network ("udp" or "tcp") for name and qtype.
func query(t testing.TB, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 10 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

// rrStrings shows records without TTL and class, sorted: "name TYPE data".
func rrStrings(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		f := strings.Fields(rr.String())
		out = append(out, strings.Join(append([]string{f[0]}, f[3:]...), " "))
	}
	slices.Sort(out)
	return out
}

func ptr[T any](v T) *T { return &v }

func service(ns, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports},
	}
	if clusterIP != "" {
		svc.Spec.ClusterIPs = []string{clusterIP}
	}
	return svc
}

func port(name string, proto corev1.Protocol, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: p}
}

func externalName(ns, name, target string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
}

// ep is an endpoint: address, hostname ("" none), ready.
type ep struct {
	addr, hostname string
	ready          bool
}

func slice(ns, svc, name string, family discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
		Ports:       ports,
	}
	for _, e := range eps {
		d := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(e.ready)}}
		if e.hostname != "" {
			d.Hostname = ptr(e.hostname)
		}
		es.Endpoints = append(es.Endpoints, d)
	}
	return es
}

func slicePort(name string, proto corev1.Protocol, p int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr(name), Protocol: ptr(proto), Port: ptr(p)}
}

// upstream is a fake upstream resolver on 127.0.0.1 (UDP and TCP on one
// port) answering from records; it counts the questions it gets.
type upstream struct {
	addr string

	mu     sync.Mutex
	counts map[string]int // "udp|tcp name TYPE"

	gate    chan struct{} // answers for gated.example.com. wait for release
	release func()
}

// Names the fake upstream knows, under example.com.
const upstreamZone = "example.com."

func startUpstream(t testing.TB) *upstream {
	t.Helper()
	u := &upstream{counts: map[string]int{}, gate: make(chan struct{})}
	u.release = sync.OnceFunc(func() { close(u.gate) })
	p, err := listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = p.addr()
	for _, srv := range []*dns.Server{
		{PacketConn: p.udp, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { u.serve(w, r, "udp") })},
		{Listener: p.tcp, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { u.serve(w, r, "tcp") })},
	} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	t.Cleanup(u.release) // runs first: no handler left waiting
	return u
}

// count is how often name/qtype was asked over network ("" = both).
func (u *upstream) count(network, name string, qtype uint16) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, nw := range []string{"udp", "tcp"} {
		if network == "" || network == nw {
			n += u.counts[fmt.Sprintf("%s %s %s", nw, strings.ToLower(name), dns.TypeToString[qtype])]
		}
	}
	return n
}

func (u *upstream) serve(w dns.ResponseWriter, r *dns.Msg, network string) {
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	u.mu.Lock()
	u.counts[fmt.Sprintf("%s %s %s", network, name, dns.TypeToString[q.Qtype])]++
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	soa, _ := dns.NewRR(upstreamZone + " 300 IN SOA ns.example.com. admin.example.com. 1 7200 1800 86400 60")
	rr := func(s string) dns.RR { x, _ := dns.NewRR(s); return x }
	switch {
	case name == "www.example.com." && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{rr("www.example.com. 300 IN A 192.0.2.1")}
	case name == "foo.example.com." && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{rr("foo.example.com. 300 IN A 192.0.2.10")}
	case name == "bar.example.com." && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{rr("bar.example.com. 300 IN A 192.0.2.11")}
	case name == "gated.example.com." && q.Qtype == dns.TypeA:
		<-u.gate
		m.Answer = []dns.RR{rr("gated.example.com. 300 IN A 192.0.2.4")}
	case name == "zero.example.com.":
		m.Answer = []dns.RR{rr("zero.example.com. 0 IN A 192.0.2.3")}
	case name == "big.example.com.":
		if network == "udp" {
			m.Truncated = true
			break
		}
		for i := range 40 {
			m.Answer = append(m.Answer, rr(fmt.Sprintf("big.example.com. 300 IN TXT \"record %02d %s\"", i, strings.Repeat("x", 40))))
		}
	case name == "fail.example.com.":
		m.Rcode = dns.RcodeServerFailure
	case name == "www.example.com.", name == "foo.example.com.", name == "bar.example.com.":
		m.Ns = []dns.RR{soa} // NODATA
	default:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{soa}
	}
	w.WriteMsg(m)
}
