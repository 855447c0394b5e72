package podconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const loopbackHosts = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestEtcHosts(t *testing.T) {
	aliases := []corev1.HostAlias{
		{IP: "192.0.2.7", Hostnames: []string{"db", "db.internal"}},
		{IP: "2001:db8::7", Hostnames: []string{"cache"}},
		{IP: "192.0.2.8"},
	}
	for _, tc := range []struct {
		name             string
		ips              []string
		hostname, domain string
		aliases          []corev1.HostAlias
		want             string
	}{{
		name: "no IPs yet", hostname: "web-0",
		want: "# Kubernetes-managed hosts file.\n" + loopbackHosts,
	}, {
		name: "one IP, no subdomain", ips: []string{"10.42.0.9"}, hostname: "web-0",
		want: "# Kubernetes-managed hosts file.\n" + loopbackHosts + "10.42.0.9\tweb-0\n",
	}, {
		name: "dual stack with subdomain", ips: []string{"10.42.0.9", "fd42::9"},
		hostname: "web-0", domain: "web.shop.svc.cluster.local",
		want: "# Kubernetes-managed hosts file.\n" + loopbackHosts +
			"10.42.0.9\tweb-0.web.shop.svc.cluster.local\tweb-0\n" +
			"fd42::9\tweb-0.web.shop.svc.cluster.local\tweb-0\n",
	}, {
		name: "host aliases", ips: []string{"10.42.0.9"}, hostname: "web-0", domain: "web.shop.svc.cluster.local",
		aliases: aliases,
		want: "# Kubernetes-managed hosts file.\n" + loopbackHosts +
			"10.42.0.9\tweb-0.web.shop.svc.cluster.local\tweb-0\n" +
			"\n# Entries added by HostAliases.\n" +
			"192.0.2.7\tdb\tdb.internal\n" +
			"2001:db8::7\tcache\n" +
			"192.0.2.8\t\n",
	}, {
		name: "empty host aliases list", ips: []string{"10.42.0.9"}, hostname: "web-0",
		aliases: []corev1.HostAlias{},
		want:    "# Kubernetes-managed hosts file.\n" + loopbackHosts + "10.42.0.9\tweb-0\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.HostAliases = tc.aliases
			if got := string(EtcHosts(pod, tc.ips, tc.hostname, tc.domain)); got != tc.want {
				t.Errorf("EtcHosts:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestEtcHostsWithHostname(t *testing.T) {
	pod := testPod()
	pod.Spec.Hostname, pod.Spec.Subdomain = "db", "dbs"
	host, domain, err := Hostname(pod, "example.internal")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file.\n" + loopbackHosts + "10.42.1.3\tdb.dbs.shop.svc.example.internal\tdb\n"
	if got := string(EtcHosts(pod, []string{"10.42.1.3"}, host, domain)); got != want {
		t.Errorf("EtcHosts:\n%s\nwant:\n%s", got, want)
	}
}

func TestEtcHostsHostNetwork(t *testing.T) {
	node := "# the node's own\n127.0.0.1\tlocalhost\n192.168.1.10\tnode-1\n"
	for _, tc := range []struct {
		name    string
		node    string
		aliases []corev1.HostAlias
		want    string
	}{{
		name: "node file as is", node: node,
		want: "# Kubernetes-managed hosts file (host network).\n" + node,
	}, {
		name: "empty node file", node: "",
		want: "# Kubernetes-managed hosts file (host network).\n",
	}, {
		name: "with aliases", node: node,
		aliases: []corev1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"a", "b"}}},
		want: "# Kubernetes-managed hosts file (host network).\n" + node +
			"\n# Entries added by HostAliases.\n192.0.2.1\ta\tb\n",
	}, {
		name: "node file without final newline", node: "127.0.0.1 localhost",
		aliases: []corev1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"a"}}},
		want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost" +
			"\n# Entries added by HostAliases.\n192.0.2.1\ta\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.HostNetwork = true
			pod.Spec.HostAliases = tc.aliases
			if got := string(EtcHostsHostNetwork([]byte(tc.node), pod)); got != tc.want {
				t.Errorf("EtcHostsHostNetwork:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}
