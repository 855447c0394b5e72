package proxy

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "NodeName is required"},
		{Config{NodeName: "n", Mode: "ipvs"}, "unknown proxy mode"},
	} {
		if _, err := newProxier(tc.cfg, fake.NewClientset(), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newProxier(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	p, err := newProxier(Config{NodeName: "n", ClusterCIDRs: prefixes(t, "10.42.1.0/16")}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.Mode != ModeIPTables || p.cfg.MinSyncPeriod != time.Second || p.cfg.SyncPeriod != 30*time.Second || p.cfg.FullSyncPeriod != time.Hour {
		t.Errorf("defaults: %+v", p.cfg)
	}
	for _, tc := range []struct {
		cidrs string // as --cluster-cidr
		want  string // family=CIDR, in order
	}{
		{"", "IPv4="},
		{"10.42.1.0/16", "IPv4=10.42.0.0/16"},
		{"fd00:42::1/56", "IPv6=fd00:42::/56"},
		{"10.42.0.0/16,fd00:42::/56", "IPv4=10.42.0.0/16 IPv6=fd00:42::/56"},
		{"fd00:42::/56,10.42.0.0/16", "IPv6=fd00:42::/56 IPv4=10.42.0.0/16"},
	} {
		p, err := newProxier(Config{NodeName: "n", ClusterCIDRs: prefixes(t, tc.cidrs)}, fake.NewClientset(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range p.families {
			got = append(got, string(f.family)+"="+f.clusterCIDR)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("ClusterCIDRs %v: families %v, want %s", tc.cidrs, got, tc.want)
		}
	}
}

// withFakeWriters gives each family of p an iptables-mode syncer on a
// fake writer, returned by family.
func withFakeWriters(p *Proxier) map[v1.IPFamily]*fakeWriter {
	out := map[v1.IPFamily]*fakeWriter{}
	for _, f := range p.families {
		w := &fakeWriter{restoreCh: make(chan string, 100)}
		f.s = newSyncer(w, nil, p.cfg.FullSyncPeriod)
		out[f.family] = w
	}
	return out
}

// clientWith is a fake clientset holding in's Services and EndpointSlices.
func clientWith(t *testing.T, in Input) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset()
	for _, s := range in.Services {
		if _, err := client.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range in.Slices {
		if _, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// TestProxierFollowsAPI runs a Proxier on a fake clientset and a fake
// iptables: it becomes ready after a full sync, and a Service added later
// reaches iptables.
func TestProxierFollowsAPI(t *testing.T) {
	in := loadInput(t, "clusterip")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := clientWith(t, in)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := newProxier(Config{NodeName: testNode, ClusterCIDRs: prefixes(t, testCIDR), MinSyncPeriod: time.Millisecond}, client, log)
	if err != nil {
		t.Fatal(err)
	}
	w := withFakeWriters(p)[v1.IPv4Protocol]
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	<-p.Ready()
	waitFor(t, w.restoreCh, "10.43.0.10 --dport 80")

	other := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "late"},
		Spec:       v1.ServiceSpec{ClusterIP: "10.43.0.99", Ports: []v1.ServicePort{{Name: "p", Port: 99, Protocol: v1.ProtocolTCP}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w.restoreCh, `"default/late:p has no endpoints" -m tcp -p tcp -d 10.43.0.99 --dport 99 -j REJECT`)

	ignored := other.DeepCopy()
	ignored.Name, ignored.Spec.ClusterIP = "ignored", "10.43.0.98"
	ignored.Labels = map[string]string{labelServiceProxyName: "someone-else"}
	if _, err := client.CoreV1().Services("default").Create(ctx, ignored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Services("default").Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	last := waitFor(t, w.restoreCh, "", "10.43.0.99")
	if strings.Contains(last, "10.43.0.98") {
		t.Error("a service of another proxy got rules")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}

// waitFor reads restores until one contains want and none of absent.
func waitFor(t *testing.T, ch chan string, want string, absent ...string) string {
	t.Helper()
	for {
		select {
		case got := <-ch:
			ok := strings.Contains(got, want)
			for _, a := range absent {
				ok = ok && !strings.Contains(got, a)
			}
			if ok {
				return got
			}
		case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
			t.Fatalf("no restore with %q (and without %q)", want, absent)
		}
	}
}

// TestProxierDualStack runs a dual-stack Proxier on a fake clientset: the
// IPv4 and IPv6 syncers each get the rules of their family from the one
// set of informers, and a single-stack Service only reaches its own.
func TestProxierDualStack(t *testing.T) {
	in := loadInput(t, "dual-stack")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := clientWith(t, in)
	p, err := newProxier(Config{NodeName: testNode, ClusterCIDRs: prefixes(t, testCIDR+","+testCIDR6), MinSyncPeriod: time.Millisecond}, client, quiet)
	if err != nil {
		t.Fatal(err)
	}
	w := withFakeWriters(p)
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	<-p.Ready()
	v4 := waitFor(t, w[v1.IPv4Protocol].restoreCh, "-d 10.43.0.10 --dport 80")
	v6 := waitFor(t, w[v1.IPv6Protocol].restoreCh, "-d fd00:43::10 --dport 80")
	for _, tc := range []struct {
		text, family, want, absent string
	}{
		{v4, "IPv4", "-d 10.43.0.20 --dport 80", "fd00:43::"},   // the IPv4-only Service
		{v6, "IPv6", "-d fd00:43::30 --dport 80", "10.43.0.20"}, // the IPv6-only Service
		{v4, "IPv4", "--to-destination 10.42.1.5:8080", "fd00:42:"},
		{v6, "IPv6", "--to-destination [fd00:42:0:1::5]:8080", "10.42.1.5"},
	} {
		if !strings.Contains(tc.text, tc.want) || strings.Contains(tc.text, tc.absent) {
			t.Errorf("%s rules: want %q and no %q in\n%s", tc.family, tc.want, tc.absent, tc.text)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}
