package server

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"orch/internal/join"
	"orch/internal/pki"
)

// TestReservedSANs: a node's serving certificate may name none of the
// apiservers' names or addresses, whatever their case.
func TestReservedSANs(t *testing.T) {
	_, serviceCIDR, _ := net.ParseCIDR("10.43.0.0/16")
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "server1", NodeIPs: []net.IP{net.ParseIP("10.0.0.1")},
		ExtraSANs: []string{"api.example.com", "10.0.0.99"}, ServiceCIDR: serviceCIDR, ClusterDomain: "corp.local"})
	if err != nil {
		t.Fatal(err)
	}
	reserved := apiserverSANs(bundle.Serving)
	reserved.addMembers([]memberInfo{
		{name: "server1-0a1b2c3d", urls: []string{"https://10.0.0.1:2380"}},
		{name: "server2-0a1b2c3d", urls: []string{"https://10.0.0.2:2380", "https://10.0.0.2:2379"}},
		{name: "orch", urls: []string{"http://etcd.example:2380"}}, // a single server's: no node in its name
	})
	for _, tc := range []struct {
		dns  []string
		ips  []string
		want string // "" means allowed
	}{
		{dns: []string{"n1", "n1.example"}, ips: []string{"10.0.0.7", "fd00::7"}},
		{dns: []string{"kubernetes"}, want: `DNS name "kubernetes" is a name of every apiserver`},
		{dns: []string{"n1", "Kubernetes.Default"}, want: `"Kubernetes.Default"`},
		{dns: []string{"kubernetes.default.svc"}, want: `"kubernetes.default.svc"`},
		{dns: []string{"kubernetes.default.svc.corp.local"}, want: `"kubernetes.default.svc.corp.local" is a name in this server's apiserver certificate`},
		{dns: []string{"localhost"}, want: `"localhost"`},
		{dns: []string{"server1"}, want: `"server1"`},
		{dns: []string{"api.example.com"}, want: `"api.example.com"`},
		{dns: []string{"server2"}, want: `"server2" is the node name of server server2-0a1b2c3d`},
		{dns: []string{"etcd.example"}, want: `"etcd.example" is the address of server orch`},
		{dns: []string{"orch"}}, // not a node's name
		{ips: []string{"10.43.0.1"}, want: "IP address 10.43.0.1 is an address in this server's apiserver certificate"},
		{ips: []string{"127.0.0.1"}, want: "IP address 127.0.0.1"},
		{ips: []string{"::1"}, want: "IP address ::1 is the loopback address"},
		{ips: []string{"10.0.0.1"}, want: "IP address 10.0.0.1"},
		{ips: []string{"10.0.0.99"}, want: "IP address 10.0.0.99"},
		{ips: []string{"10.0.0.2"}, want: "IP address 10.0.0.2 is the address of server server2-0a1b2c3d"},
		{ips: []string{"127.0.0.2"}}, // loopback, but no apiserver's
	} {
		key, _, err := pki.NewPrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		var ips []net.IP
		for _, s := range tc.ips {
			ips = append(ips, net.ParseIP(s))
		}
		data, err := pki.NewCSR(key, "system:node:n1", []string{join.NodesGroup}, tc.dns, ips)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := pki.ParseCSRPEM(data)
		if err != nil {
			t.Fatal(err)
		}
		err = reserved.check(csr)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v refused: %v", tc.dns, tc.ips, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %v: %v, want an error saying %q", tc.dns, tc.ips, err, tc.want)
		case err != nil && !strings.Contains(err.Error(), "may not name an apiserver"):
			t.Errorf("%q does not say why", err)
		}
	}
}

// TestJoinHandlerReservedSANs: over HTTP, an agent asking for a serving
// certificate for the server's address gets 403 naming it; the server's
// own agent, which has the server's names, is served.
func TestJoinHandlerReservedSANs(t *testing.T) {
	rs := startRecordingServer(t) // its apiserver certificate: localhost, 127.0.0.1
	post := func(secret, name string, ips ...string) (int, string) {
		t.Helper()
		nodes := []string{join.NodesGroup}
		req := join.CertificatesRequest{NodeName: name, NodeIPs: ips, NodePassword: "pw-" + name,
			ClientCSR: csrPEM(t, join.NodeUser(name), nodes, nil), ServingCSR: csrPEM(t, join.NodeUser(name), nodes, []string{name}, ips...)}
		return joinCall(t, rs, http.MethodPost, join.CertificatesPath, join.TokenUser, secret, req)
	}
	if code, msg := post("the-secret", "n1", "10.0.0.7"); code != http.StatusOK {
		t.Errorf("an agent with its own address: %d %s", code, msg)
	}
	if code, msg := post("the-secret", "n2", "10.0.0.8", "127.0.0.1"); code != http.StatusForbidden || !strings.Contains(msg, "IP address 127.0.0.1") {
		t.Errorf("an agent at 127.0.0.1: %d %q, want 403 naming 127.0.0.1", code, msg)
	}
	if code, msg := post("the-secret", "localhost", "10.0.0.9"); code != http.StatusForbidden || !strings.Contains(msg, `DNS name "localhost"`) {
		t.Errorf("an agent named localhost: %d %q, want 403 naming localhost", code, msg)
	}
	if code, msg := post("own-secret", "localhost", "127.0.0.1"); code != http.StatusOK {
		t.Errorf("the server's own agent: %d %s", code, msg)
	}
}
