package dns

import (
	"context"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// FuzzHandle feeds arbitrary bytes to the query handler: it must never
// panic, and must either drop the message or give a reply that packs,
// unpacks, answers the query's ID and fits a UDP client's buffer.
func FuzzHandle(f *testing.F) {
	s, err := New(Config{Domain: "cluster.local", Listen: []string{"127.0.0.1:0"}, ResolvConf: "/nonexistent"}, fake.NewClientset(), discard())
	if err != nil {
		f.Fatal(err)
	}
	for _, obj := range clusterObjects() {
		store := s.svcs.GetIndexer()
		if _, ok := obj.(*discoveryv1.EndpointSlice); ok {
			store = s.slices.GetIndexer()
		}
		if err := store.Add(obj); err != nil {
			f.Fatal(err)
		}
	}
	s.synced.Store(true)

	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"web.ns1.svc.cluster.local.", dns.TypeA},
		{"_http._tcp.headless.ns1.svc.cluster.local.", dns.TypeSRV},
		{"ext.ns1.svc.cluster.local.", dns.TypeA},
		{"10-1-2-3.ns1.pod.cluster.local.", dns.TypeA},
		{"5.0.42.10.in-addr.arpa.", dns.TypePTR},
		{"dns-version.cluster.local.", dns.TypeTXT},
		{"www.example.com.", dns.TypeA},
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		b, _ := m.Pack()
		f.Add(b, false)
		m.SetEdns0(4096, true)
		b, _ = m.Pack()
		f.Add(b, true)
	}
	f.Add([]byte{0, 1, 2}, false)

	f.Fuzz(func(t *testing.T, data []byte, tcp bool) {
		req := new(dns.Msg)
		if err := req.Unpack(data); err != nil {
			return // the dns.Server answers FORMERR before the handler
		}
		reply, _ := s.handle(context.Background(), req, tcp)
		if reply == nil {
			if !req.Response {
				t.Fatalf("query dropped: %v", req)
			}
			return
		}
		b, err := reply.Pack()
		if err != nil {
			t.Fatalf("reply does not pack: %v\nquery %v\nreply %v", err, req, reply)
		}
		got := new(dns.Msg)
		if err := got.Unpack(b); err != nil {
			t.Fatalf("reply does not unpack: %v", err)
		}
		if got.Id != req.Id || !got.Response {
			t.Fatalf("reply id %d response %v, want id %d response", got.Id, got.Response, req.Id)
		}
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(size, int(opt.UDPSize()))
		}
		if !tcp && len(b) > size {
			t.Fatalf("udp reply of %d bytes for a buffer of %d", len(b), size)
		}
	})
}
