package network

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeDataplane records the plans it is given; the first fail applies fail.
type fakeDataplane struct {
	mu    sync.Mutex
	fail  int
	calls int
	plans chan routePlan // the plans applied successfully
}

func (f *fakeDataplane) apply(p routePlan) error {
	f.mu.Lock()
	f.calls++
	failing := f.calls <= f.fail
	f.mu.Unlock()
	if failing {
		return errors.New("injected failure")
	}
	f.plans <- p
	return nil
}

// waitPlan returns the first plan applied that renders as want (see
// planString), or fails the test when none does before ctx ends.
func waitPlan(t *testing.T, ctx context.Context, plans <-chan routePlan, want string) {
	t.Helper()
	var last string
	for {
		select {
		case p := <-plans:
			if last = planString(p); last == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no plan\n%s\napplied; last:\n%s", want, last)
		}
	}
}

// startRouter runs r.Start until the test ends and checks it returns nil.
func startRouter(t *testing.T, r *Router) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v; want nil when ctx ends", err)
		}
	})
	wait, stop := context.WithTimeout(ctx, time.Minute) // a guard, not an assertion
	t.Cleanup(stop)
	return wait
}

// TestRouterFollowsNodes: the Router applies a plan with the peers known
// at start, and a new one as nodes join, change IP or podCIDR and leave.
func TestRouterFollowsNodes(t *testing.T) {
	client := fake.NewClientset(
		routeNode("a", "10.42.1.0/24", internal("192.168.0.1")),
		routeNode("b", "10.42.2.0/24", internal("192.168.0.2")))
	r, err := NewRouter(RouteConfig{NodeName: "a", NodeIP: net.ParseIP("192.168.0.1"), ClusterCIDR: "10.42.0.0/16"}, client, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dp := &fakeDataplane{plans: make(chan routePlan, 100)}
	r.dp = dp
	ctx := startRouter(t, r)
	nodes := client.CoreV1().Nodes()

	waitPlan(t, ctx, dp.plans, "local 10.42.1.0/24\nroute b 10.42.2.0/24 via 10.42.2.0 onlink=true\n"+
		"neigh 10.42.2.0 0e:6f:c0:a8:00:02\nfdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\n")
	select {
	case <-r.Ready():
	case <-ctx.Done():
		t.Fatal("not Ready after a successful sync")
	}

	if _, err := nodes.Create(ctx, routeNode("c", "10.42.3.0/24", internal("192.168.0.3")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlan(t, ctx, dp.plans, "local 10.42.1.0/24\n"+
		"route b 10.42.2.0/24 via 10.42.2.0 onlink=true\nroute c 10.42.3.0/24 via 10.42.3.0 onlink=true\n"+
		"neigh 10.42.2.0 0e:6f:c0:a8:00:02\nneigh 10.42.3.0 0e:6f:c0:a8:00:03\n"+
		"fdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\nfdb 0e:6f:c0:a8:00:03 dst 192.168.0.3\n")

	b := routeNode("b", "10.42.20.0/24", internal("192.168.0.20"))
	if _, err := nodes.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlan(t, ctx, dp.plans, "local 10.42.1.0/24\nroute b 10.42.20.0/24 via 10.42.20.0 onlink=true\n"+
		"neigh 10.42.20.0 0e:6f:c0:a8:00:14\nfdb 0e:6f:c0:a8:00:14 dst 192.168.0.20\n")

	if err := nodes.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlan(t, ctx, dp.plans, "local 10.42.1.0/24\n")
}

// TestRouterRetries: a failed sync is retried, and Ready waits for the
// first that succeeds; with no Node at all the host is still set up.
func TestRouterRetries(t *testing.T) {
	r, err := NewRouter(RouteConfig{NodeName: "a", NodeIP: net.ParseIP("192.168.0.1"), Backend: BackendHostGW, ClusterCIDR: "10.42.0.0/16"},
		fake.NewClientset(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dp := &fakeDataplane{fail: 2, plans: make(chan routePlan, 100)}
	r.dp = dp
	ctx := startRouter(t, r)
	select {
	case <-r.Ready():
	case <-ctx.Done():
		t.Fatal("not Ready after failures")
	}
	dp.mu.Lock()
	calls := dp.calls
	dp.mu.Unlock()
	if calls < 3 {
		t.Errorf("Ready after %d applies; want it after the third (two injected failures)", calls)
	}
	waitPlan(t, ctx, dp.plans, "local <nil>\n")
}

// TestRouterResyncs: with no Node changing at all, the host is synced
// again every Resync (which puts back what was changed by hand).
func TestRouterResyncs(t *testing.T) {
	r, err := NewRouter(RouteConfig{NodeName: "a", NodeIP: net.ParseIP("192.168.0.1"), ClusterCIDR: "10.42.0.0/16", Resync: 10 * time.Millisecond},
		fake.NewClientset(routeNode("b", "10.42.2.0/24", internal("192.168.0.2"))), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	dp := &fakeDataplane{plans: make(chan routePlan, 100)}
	r.dp = dp
	ctx := startRouter(t, r)
	want := "local <nil>\nroute b 10.42.2.0/24 via 10.42.2.0 onlink=true\nneigh 10.42.2.0 0e:6f:c0:a8:00:02\nfdb 0e:6f:c0:a8:00:02 dst 192.168.0.2\n"
	for range 3 {
		waitPlan(t, ctx, dp.plans, want)
	}
}

// TestRouterBackendNone: Ready at once, nothing applied (no dataplane).
func TestRouterBackendNone(t *testing.T) {
	r, err := NewRouter(RouteConfig{Backend: BackendNone}, fake.NewClientset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.dp != nil {
		t.Errorf("backend none has a dataplane %T; want none", r.dp)
	}
	ctx := startRouter(t, r)
	select {
	case <-r.Ready():
	case <-ctx.Done():
		t.Fatal("backend none: not Ready")
	}
}

func TestNewRouterErrors(t *testing.T) {
	ok := RouteConfig{NodeName: "a", NodeIP: net.ParseIP("192.168.0.1"), ClusterCIDR: "10.42.0.0/16"}
	for _, tc := range []struct {
		name string
		edit func(*RouteConfig)
		want string // "" is no error
	}{
		{"defaults", func(*RouteConfig) {}, ""},
		{"unknown backend", func(c *RouteConfig) { c.Backend = "wireguard" }, `unknown backend "wireguard"; use "vxlan", "host-gw" or "none"`},
		{"no node name", func(c *RouteConfig) { c.NodeName = "" }, "--node-name"},
		{"no node IP", func(c *RouteConfig) { c.NodeIP = nil }, "set --node-ip"},
		{"IPv6 node IP", func(c *RouteConfig) { c.NodeIP = net.ParseIP("fd00::1") }, "needs an IPv4 node IP"},
		{"bad cluster CIDR", func(c *RouteConfig) { c.ClusterCIDR = "10.42.0.0" }, "--cluster-cidr"},
		{"two IPv4 cluster CIDRs", func(c *RouteConfig) { c.ClusterCIDR = "10.42.0.0/16,10.44.0.0/16" }, "one IPv4 and one IPv6"},
		{"dual-stack cluster CIDR", func(c *RouteConfig) { c.ClusterCIDR = "10.42.0.0/16,fd00:42::/56" }, ""},
		{"port", func(c *RouteConfig) { c.VXLANPort = 70000 }, "VXLAN port 70000 is out of range"},
		{"VNI", func(c *RouteConfig) { c.VNI = 1 << 24 }, "VNI 16777216 is out of range"},
		{"none needs nothing", func(c *RouteConfig) { *c = RouteConfig{Backend: BackendNone} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			r, err := NewRouter(cfg, fake.NewClientset(), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Backend == "" && (r.cfg.Backend != BackendVXLAN || r.cfg.VXLANPort != 8472 || r.cfg.VNI != 1 || r.cfg.Resync != DefaultRouteResync) {
					t.Errorf("defaults: %+v", r.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRouter: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
