package dns

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWatch changes objects through the API and waits for the answers to
// follow: the zone is driven by the informers' watches.
func TestWatch(t *testing.T) {
	up := startUpstream(t)
	s, client := startServer(t, Config{Upstreams: []string{up.addr}})
	http := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	svcs := client.CoreV1().Services("ns1")
	es := client.DiscoveryV1().EndpointSlices("ns1")
	ctx := context.Background()
	for _, step := range []struct {
		what   string
		do     func() error
		name   string
		qtype  uint16
		rcode  int
		answer []string
	}{
		{"service created", func() error {
			_, err := svcs.Create(ctx, service("ns1", "late", "10.43.0.50", port("http", corev1.ProtocolTCP, 80)), metav1.CreateOptions{})
			return err
		}, "late.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"late.ns1.svc.cluster.local. A 10.43.0.50"}},
		{"its PTR", nil, "50.0.43.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"50.0.43.10.in-addr.arpa. PTR late.ns1.svc.cluster.local."}},
		{"headless service and slice created", func() error {
			if _, err := svcs.Create(ctx, service("ns1", "hl", corev1.ClusterIPNone), metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := es.Create(ctx, slice("ns1", "hl", "hl-1", discoveryv1.AddressTypeIPv4, http, ep{"10.42.0.20", "", true}), metav1.CreateOptions{})
			return err
		}, "hl.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"hl.ns1.svc.cluster.local. A 10.42.0.20"}},
		{"endpoints changed", func() error {
			_, err := es.Update(ctx, slice("ns1", "hl", "hl-1", discoveryv1.AddressTypeIPv4, http, ep{"10.42.0.20", "", false}, ep{"10.42.0.21", "", true}), metav1.UpdateOptions{})
			return err
		}, "hl.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"hl.ns1.svc.cluster.local. A 10.42.0.21"}},
		{"second slice", func() error {
			_, err := es.Create(ctx, slice("ns1", "hl", "hl-2", discoveryv1.AddressTypeIPv4, http, ep{"10.42.0.22", "hl-x", true}), metav1.CreateOptions{})
			return err
		}, "hl-x.hl.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"hl-x.hl.ns1.svc.cluster.local. A 10.42.0.22"}},
		{"externalName created", func() error {
			_, err := svcs.Create(ctx, externalName("ns1", "ext", "foo.example.com"), metav1.CreateOptions{})
			return err
		}, "ext.ns1.svc.cluster.local.", dns.TypeCNAME, dns.RcodeSuccess, []string{"ext.ns1.svc.cluster.local. CNAME foo.example.com."}},
		{"externalName changed", func() error {
			_, err := svcs.Update(ctx, externalName("ns1", "ext", "bar.example.com"), metav1.UpdateOptions{})
			return err
		}, "ext.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"bar.example.com. A 192.0.2.11", "ext.ns1.svc.cluster.local. CNAME bar.example.com."}},
		{"externalName turned ClusterIP", func() error {
			_, err := svcs.Update(ctx, service("ns1", "ext", "10.43.0.51", port("http", corev1.ProtocolTCP, 80)), metav1.UpdateOptions{})
			return err
		}, "ext.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"ext.ns1.svc.cluster.local. A 10.43.0.51"}},
		{"service deleted", func() error {
			return svcs.Delete(ctx, "late", metav1.DeleteOptions{})
		}, "late.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"its PTR is forwarded", nil, "50.0.43.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil},
		{"slices deleted", func() error {
			if err := es.Delete(ctx, "hl-1", metav1.DeleteOptions{}); err != nil {
				return err
			}
			return es.Delete(ctx, "hl-2", metav1.DeleteOptions{})
		}, "hl.ns1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, nil},
	} {
		if step.do != nil {
			if err := step.do(); err != nil {
				t.Fatalf("%s: %v", step.what, err)
			}
		}
		var got []string
		var rcode int
		deadline := time.Now().Add(hangGuard)
		for {
			r := query(t, "udp", s.Addrs()[0], step.name, step.qtype)
			got, rcode = rrStrings(r.Answer), r.Rcode
			if rcode == step.rcode && (slices.Equal(got, step.answer) || len(got)+len(step.answer) == 0) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s %s is %s %q, want %s %q", step.what, step.name, dns.TypeToString[step.qtype],
					dns.RcodeToString[rcode], got, dns.RcodeToString[step.rcode], step.answer)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
