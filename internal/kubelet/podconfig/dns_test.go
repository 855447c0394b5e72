package podconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestDNSConfig(t *testing.T) {
	cluster := ClusterDNS{Servers: []string{"10.43.0.10"}, Domain: "cluster.local"}
	host := HostResolv{
		Nameservers: []string{"192.168.1.1", "192.168.1.2"},
		Searches:    []string{"lan", "corp.example"},
		Options:     []string{"edns0", "ndots:2", "foo:"},
	}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	missing := DNSWarning{Reason: ReasonMissingClusterDNS,
		Message: `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`}
	podDNS := &corev1.PodDNSConfig{
		Nameservers: []string{"192.0.2.53", "10.43.0.10"},
		Searches:    []string{"my.example", "lan"},
		Options: []corev1.PodDNSConfigOption{
			{Name: "ndots", Value: ptrTo("3")},
			{Name: "single-request"},
			{Name: "timeout", Value: ptrTo("")},
		},
	}

	for _, tc := range []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		dnsConfig   *corev1.PodDNSConfig
		cluster     ClusterDNS
		host        HostResolv
		want        *runtimeapi.DNSConfig
		warnings    []DNSWarning
	}{{
		name: "ClusterFirst", policy: corev1.DNSClusterFirst, cluster: cluster, host: host,
		want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"},
			Searches: append(slices.Clone(clusterSearch), "lan", "corp.example"), Options: []string{"ndots:5"}},
	}, {
		name: "ClusterFirst, host searches repeat cluster ones", policy: corev1.DNSClusterFirst, cluster: cluster,
		host: HostResolv{Nameservers: []string{"192.168.1.1"}, Searches: []string{"cluster.local", "lan", "lan"}},
		want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"},
			Searches: append(slices.Clone(clusterSearch), "lan"), Options: []string{"ndots:5"}},
	}, {
		name: "ClusterFirst, no cluster domain", policy: corev1.DNSClusterFirst,
		cluster: ClusterDNS{Servers: []string{"10.43.0.10", "10.43.0.11"}},
		host:    HostResolv{Searches: []string{"lan", "lan"}},
		want:    &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10", "10.43.0.11"}, Searches: []string{"lan", "lan"}, Options: []string{"ndots:5"}},
	}, {
		name: "ClusterFirst, cluster servers normalised", policy: corev1.DNSClusterFirst,
		cluster: ClusterDNS{Servers: []string{"fd43:0:0::a", "::ffff:10.43.0.10"}, Domain: "cluster.local"},
		want:    &runtimeapi.DNSConfig{Servers: []string{"fd43::a", "10.43.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
	}, {
		name: "ClusterFirst on the host network is Default", policy: corev1.DNSClusterFirst, hostNetwork: true, cluster: cluster, host: host,
		want: &runtimeapi.DNSConfig{Servers: host.Nameservers, Searches: host.Searches, Options: host.Options},
	}, {
		name: "ClusterFirstWithHostNet on the host network", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true, cluster: cluster, host: host,
		want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"},
			Searches: append(slices.Clone(clusterSearch), "lan", "corp.example"), Options: []string{"ndots:5"}},
	}, {
		name: "ClusterFirstWithHostNet on the pod network", policy: corev1.DNSClusterFirstWithHostNet, cluster: cluster,
		want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
	}, {
		name: "Default", policy: corev1.DNSDefault, cluster: cluster,
		host: HostResolv{Nameservers: []string{"192.168.1.1", "192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"rotate"}},
		want: &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"rotate"}},
	}, {
		name: "None", policy: corev1.DNSNone, cluster: cluster, host: host,
		want: &runtimeapi.DNSConfig{},
	}, {
		name: "None with dnsConfig", policy: corev1.DNSNone, cluster: cluster, host: host,
		dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"192.0.2.53", "192.0.2.54", "192.0.2.53"},
			Searches:    []string{"a.example", "b.example", "a.example"},
			Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("1")}, {Name: "edns0"}, {Name: "ndots", Value: ptrTo("2")}},
		},
		want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"a.example", "b.example"},
			Options: []string{"ndots:2", "edns0"}},
	}, {
		name: "ClusterFirst with dnsConfig", policy: corev1.DNSClusterFirst, cluster: cluster, host: host, dnsConfig: podDNS,
		want: &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10", "192.0.2.53"},
			Searches: append(slices.Clone(clusterSearch), "lan", "corp.example", "my.example"),
			Options:  []string{"ndots:3", "single-request", "timeout"}},
	}, {
		name: "Default with dnsConfig", policy: corev1.DNSDefault, cluster: cluster, host: host, dnsConfig: podDNS,
		want: &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.2", "192.0.2.53"},
			Searches: []string{"lan", "corp.example", "my.example"},
			Options:  []string{"edns0", "ndots:3", "foo", "single-request", "timeout"}},
		warnings: []DNSWarning{{Reason: ReasonDNSConfigForming, Message: "Nameserver limits were exceeded, some nameservers have been omitted, " +
			"the applied nameserver line is: 192.168.1.1 192.168.1.2 192.0.2.53"}},
	}, {
		name: "ClusterFirst without cluster DNS", policy: corev1.DNSClusterFirst, cluster: ClusterDNS{Domain: "cluster.local"}, host: host,
		want:     &runtimeapi.DNSConfig{Servers: host.Nameservers, Searches: host.Searches, Options: host.Options},
		warnings: []DNSWarning{missing},
	}, {
		name: "ClusterFirstWithHostNet without cluster DNS", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true,
		cluster: ClusterDNS{Domain: "cluster.local"}, host: host,
		want:     &runtimeapi.DNSConfig{Servers: host.Nameservers, Searches: host.Searches, Options: host.Options},
		warnings: []DNSWarning{missing},
	}, {
		name: "ClusterFirst without cluster DNS, with dnsConfig", policy: corev1.DNSClusterFirst, host: HostResolv{Nameservers: []string{"192.168.1.1"}},
		dnsConfig: &corev1.PodDNSConfig{Searches: []string{"x.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("1")}}},
		want:      &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1"}, Searches: []string{"x.example"}, Options: []string{"ndots:1"}},
		warnings:  []DNSWarning{missing},
	}, {
		name: "unknown policy is ClusterFirst, even on the host network", policy: "", hostNetwork: true, cluster: cluster,
		want:     &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		warnings: []DNSWarning{{Message: `invalid DNSPolicy=: falling back to "ClusterFirst" policy`}},
	}, {
		name: "four cluster servers", policy: corev1.DNSClusterFirst,
		cluster: ClusterDNS{Servers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}, Domain: "cluster.local"},
		want:    &runtimeapi.DNSConfig{Servers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		warnings: []DNSWarning{{Reason: ReasonDNSConfigForming, Message: "Nameserver limits were exceeded, some nameservers have been omitted, " +
			"the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.dnsConfig
			got, warnings, err := DNSConfig(pod, tc.cluster, tc.host)
			if err != nil {
				t.Fatal(err)
			}
			if !dnsEqual(got, tc.want) {
				t.Errorf("DNSConfig = %v\nwant %v", got, tc.want)
			}
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings = %q\nwant %q", warnings, tc.warnings)
			}
		})
	}
}

func dnsEqual(a, b *runtimeapi.DNSConfig) bool {
	return slices.Equal(a.Servers, b.Servers) && slices.Equal(a.Searches, b.Searches) && slices.Equal(a.Options, b.Options)
}

func TestDNSConfigSearchLimits(t *testing.T) {
	name := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	numbered := func(n int) []string {
		var ss []string
		for i := range n {
			ss = append(ss, fmt.Sprintf("d%d.example", i))
		}
		return ss
	}
	// 8×250 + 40 + 8 separators: exactly 2048 characters.
	full := []string{name('a', 250), name('b', 250), name('c', 250), name('d', 250), name('e', 250), name('f', 250), name('g', 250), name('h', 250), name('i', 40)}
	for _, tc := range []struct {
		name     string
		searches []string
		want     []string
		cut      bool
	}{
		{name: "32 domains", searches: numbered(32), want: numbered(32)},
		{name: "33 domains", searches: numbered(33), want: numbered(32), cut: true},
		{name: "253 characters", searches: []string{"a.example", name('x', 253)}, want: []string{"a.example", name('x', 253)}},
		{name: "254 characters", searches: []string{"a.example", name('x', 254), "b.example"}, want: []string{"a.example", "b.example"}, cut: true},
		{name: "2048 characters", searches: full, want: full},
		{name: "2050 characters", searches: append(slices.Clone(full), "z"), want: full, cut: true},
		{name: "cut from the end until it fits", searches: append(slices.Clone(full[:8]), "y", name('z', 40), "w"), want: append(slices.Clone(full[:8]), "y"), cut: true},
		{name: "count first, then length", searches: append(numbered(31), name('x', 300), "last.example"), want: numbered(31), cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.DNSPolicy = corev1.DNSDefault
			host := HostResolv{Nameservers: []string{"192.168.1.1"}, Searches: slices.Clone(tc.searches)}
			got, warnings, err := DNSConfig(pod, ClusterDNS{}, host)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Searches, tc.want) {
				t.Errorf("searches = %q\nwant %q", got.Searches, tc.want)
			}
			if !slices.Equal(host.Searches, tc.searches) {
				t.Errorf("input searches changed to %q", host.Searches)
			}
			var want []DNSWarning
			if tc.cut {
				want = []DNSWarning{{Reason: ReasonDNSConfigForming,
					Message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(tc.want, " ")}}
			}
			if !slices.Equal(warnings, want) {
				t.Errorf("warnings = %q\nwant %q", warnings, want)
			}
		})
	}
}

func TestDNSConfigClusterPrefixCountsInLimits(t *testing.T) {
	pod := testPod()
	pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	host := HostResolv{}
	for i := range 31 {
		host.Searches = append(host.Searches, fmt.Sprintf("h%d.example", i))
	}
	got, warnings, err := DNSConfig(pod, ClusterDNS{Servers: []string{"10.43.0.10"}, Domain: "cluster.local"}, host)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}, host.Searches[:29]...)
	if !slices.Equal(got.Searches, want) {
		t.Errorf("searches = %q\nwant %q", got.Searches, want)
	}
	if len(warnings) != 1 || warnings[0].Reason != ReasonDNSConfigForming {
		t.Errorf("warnings = %q", warnings)
	}
}

func TestDNSConfigBadClusterServer(t *testing.T) {
	pod := testPod()
	pod.Spec.DNSPolicy = corev1.DNSDefault
	_, _, err := DNSConfig(pod, ClusterDNS{Servers: []string{"10.43.0.10", "dns.local"}}, HostResolv{})
	if err == nil || !strings.Contains(err.Error(), `"dns.local"`) {
		t.Errorf("err = %v", err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Errorf("a node configuration error is not an invalid pod: %v", err)
	}
}

func TestDNSConfigFromParsedResolvConf(t *testing.T) {
	host, err := ParseResolvConf([]byte("search home.arpa .\nnameserver 192.168.1.1\noptions edns0 trust-ad\n"))
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod()
	pod.Spec.DNSPolicy = corev1.DNSClusterFirst
	got, warnings, err := DNSConfig(pod, ClusterDNS{Servers: []string{"10.43.0.10"}, Domain: "cluster.local"}, host)
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	want := &runtimeapi.DNSConfig{
		Servers:  []string{"10.43.0.10"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "home.arpa"},
		Options:  []string{"ndots:5"},
	}
	if !dnsEqual(got, want) {
		t.Errorf("DNSConfig = %v\nwant %v", got, want)
	}
}
