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
		{Config{NodeName: "n", ClusterCIDR: "10.42.0.0"}, "not an IPv4 CIDR"},
		{Config{NodeName: "n", ClusterCIDR: "fd00::/64"}, "not an IPv4 CIDR"},
	} {
		if _, err := newProxier(tc.cfg, fake.NewClientset(), nil, &fakeWriter{}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newProxier(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	p, err := newProxier(Config{NodeName: "n", ClusterCIDR: "10.42.1.0/16"}, fake.NewClientset(), nil, &fakeWriter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.ClusterCIDR != "10.42.0.0/16" || p.cfg.MinSyncPeriod != time.Second || p.cfg.SyncPeriod != 30*time.Second || p.cfg.FullSyncPeriod != time.Hour {
		t.Errorf("defaults: %+v", p.cfg)
	}
}

// TestProxierFollowsAPI runs a Proxier on a fake clientset and a fake
// iptables: it becomes ready after a full sync, and a Service added later
// reaches iptables.
func TestProxierFollowsAPI(t *testing.T) {
	in := loadInput(t, "clusterip")
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range in.Services {
		if _, err := client.CoreV1().Services(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range in.Slices {
		if _, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := &fakeWriter{restoreCh: make(chan string, 100)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := newProxier(Config{NodeName: testNode, ClusterCIDR: testCIDR, MinSyncPeriod: time.Millisecond}, client, log, w, nil)
	if err != nil {
		t.Fatal(err)
	}
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
