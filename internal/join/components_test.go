package join

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orch/internal/pki"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// whoami asks the fake server who rc's client certificate says it is.
func whoami(t *testing.T, rc *rest.Config) string {
	t.Helper()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, err := client.Discovery().RESTClient().Get().AbsPath(whoamiPath).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s: %v", whoamiPath, err)
	}
	return string(data)
}

// TestComponentIdentities: Join asks for a certificate per component
// user; each RESTConfigFor presents its own, RESTConfig the node's; the
// files are stored with the right modes and reused by the next Join.
func TestComponentIdentities(t *testing.T) {
	f := newFakeServer(t)
	dir := t.TempDir()
	cfg := f.config(t, dir)
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var req CertificatesRequest
	for _, r := range f.recorded() {
		if r.path == CertificatesPath {
			if err := json.Unmarshal([]byte(r.body), &req); err != nil {
				t.Fatal(err)
			}
		}
	}
	var asked []string
	for user := range req.ComponentCSRs {
		asked = append(asked, user)
	}
	slices.Sort(asked)
	if want := []string{"system:kube-proxy", "system:orch-dns", "system:orch-ingress", "system:orch-local-path", "system:orch-network"}; !slices.Equal(asked, want) {
		t.Errorf("component CSRs for %v, want %v", asked, want)
	}
	if got := whoami(t, creds.RESTConfig()); got != "system:node:n1" {
		t.Errorf("RESTConfig acts as %q, want the node", got)
	}
	for _, user := range ComponentUsers() {
		if !creds.HasIdentity(user) {
			t.Errorf("no identity for %s", user)
		}
		if got := whoami(t, creds.RESTConfigFor(user)); got != user {
			t.Errorf("RESTConfigFor(%s) acts as %q", user, got)
		}
		for name, mode := range map[string]os.FileMode{ComponentCertFile(user): 0o644, ComponentKeyFile(user): 0o600} {
			st, err := os.Stat(filepath.Join(dir, "agent", "tls", name))
			if err != nil || st.Mode().Perm() != mode {
				t.Errorf("%s: %v, want mode %o", name, err, mode)
			}
		}
	}
	if got := ComponentCertFile(KubeProxyUser); got != "client-kube-proxy.crt" {
		t.Errorf("ComponentCertFile(%s) = %s", KubeProxyUser, got)
	}

	before := len(f.recorded())
	again, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()) - before; n != 0 {
		t.Errorf("a second Join sent %d requests, want none", n)
	}
	for _, user := range ComponentUsers() {
		if !again.HasIdentity(user) || !again.clientCertificateFor(user).Leaf.Equal(creds.clientCertificateFor(user).Leaf) {
			t.Errorf("the second Join did not reuse the certificate of %s", user)
		}
	}
	if !again.renewAt().After(time.Now()) {
		t.Error("stored certificates with components are due for renewal at once")
	}
}

// TestComponentsFromAnOlderServer: a server that ignores component CSRs
// leaves the components on the node's identity; the stored certificates
// are reused without asking again.
func TestComponentsFromAnOlderServer(t *testing.T) {
	f := newFakeServer(t)
	f.old = true
	dir := t.TempDir()
	cfg := f.config(t, dir)
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range ComponentUsers() {
		if creds.HasIdentity(user) {
			t.Errorf("an identity for %s from a server that issued none", user)
		}
		if got := whoami(t, creds.RESTConfigFor(user)); got != "system:node:n1" {
			t.Errorf("RESTConfigFor(%s) acts as %q, want the node's identity", user, got)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "agent", "tls", ComponentsFile)); err != nil || len(data) != 0 {
		t.Errorf("components file %q, %v; want it empty", data, err)
	}
	before := len(f.recorded())
	if _, err := Join(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()) - before; n != 0 {
		t.Errorf("a second Join sent %d requests, want none", n)
	}
}

// TestComponentsAfterUpgrade: certificates stored by an agent of an older
// version (no components file) are used at once, and the Renewer asks for
// the components right away; connections made before switch to the
// component's identity.
func TestComponentsAfterUpgrade(t *testing.T) {
	f := newFakeServer(t)
	dir := t.TempDir()
	cfg := f.config(t, dir)
	if _, err := Join(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "agent", "tls")
	os.Remove(filepath.Join(tlsDir, ComponentsFile))
	for _, user := range ComponentUsers() {
		os.Remove(filepath.Join(tlsDir, ComponentCertFile(user)))
		os.Remove(filepath.Join(tlsDir, ComponentKeyFile(user)))
	}
	before := len(f.recorded())
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()) - before; n != 0 {
		t.Errorf("Join sent %d requests, want none (the node's certificates are valid)", n)
	}
	if creds.HasIdentity(DNSUser) {
		t.Fatal("an identity without its files")
	}
	if !creds.renewAt().IsZero() {
		t.Errorf("renewAt = %s, want at once", creds.renewAt())
	}
	rc := creds.RESTConfigFor(DNSUser)
	if got := whoami(t, rc); got != "system:node:n1" {
		t.Errorf("before renewal the DNS acts as %q, want the node", got)
	}
	// renewAt is zero, so Start renews at once: renew is what it runs.
	r, err := NewRenewer(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !creds.HasIdentity(DNSUser) || !creds.renewAt().After(time.Now()) {
		t.Fatalf("after renewal: identity %v, next renewal %s", creds.HasIdentity(DNSUser), creds.renewAt())
	}
	if got := whoami(t, rc); got != DNSUser {
		t.Errorf("after renewal the same rest.Config acts as %q, want %s", got, DNSUser)
	}
	if data, _ := os.ReadFile(filepath.Join(tlsDir, ComponentsFile)); len(strings.Fields(string(data))) != len(ComponentUsers()) {
		t.Errorf("components file %q after renewal, want one line per component user", data)
	}
}

// TestComponentCertificateChecked: a component certificate for another
// user, or one the agent did not ask for, is refused.
func TestComponentCertificateChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		swap func(map[string]string)
		want string
	}{
		"another key's": {func(m map[string]string) { m[DNSUser] = m[KubeProxyUser] }, `system:orch-dns certificate is not for its key`},
		"not asked for": {func(m map[string]string) { m["system:admin"] = m[KubeProxyUser] }, `did not ask for`},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t)
			f.answer = func(w http.ResponseWriter, req CertificatesRequest, _ int) {
				rec := &responseRecorder{header: http.Header{}}
				f.sign(rec, req)
				var resp CertificatesResponse
				if err := json.Unmarshal(rec.body, &resp); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				tc.swap(resp.ComponentCertificates)
				json.NewEncoder(w).Encode(resp)
			}
			_, err := Join(context.Background(), f.config(t, t.TempDir()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Join: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// responseRecorder keeps what a handler writes.
type responseRecorder struct {
	header http.Header
	body   []byte
}

func (r *responseRecorder) Header() http.Header { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) {
	r.body = append(r.body, b...)
	return len(b), nil
}
func (r *responseRecorder) WriteHeader(int) {}

// TestCheckComponentSubjects: a component certificate must be for its
// user, with no groups and no host names.
func TestCheckComponentSubjects(t *testing.T) {
	f := newFakeServer(t)
	c, err := f.config(t, t.TempDir()).check()
	if err != nil {
		t.Fatal(err)
	}
	// The node's own certificates, as the server signs them.
	node := func() *issuedCerts {
		issued := &issuedCerts{componentsKnown: true}
		var err error
		if issued.clientKey, err = newKeyPair(); err != nil {
			t.Fatal(err)
		}
		if issued.servingKey, err = newKeyPair(); err != nil {
			t.Fatal(err)
		}
		issued.clientCertPEM = signFor(t, f, issued.clientKey, "system:node:n1", []string{NodesGroup}, nil, x509.ExtKeyUsageClientAuth)
		issued.servingCertPEM = signFor(t, f, issued.servingKey, "system:node:n1", []string{NodesGroup}, c.servingDNSNames(), x509.ExtKeyUsageServerAuth, c.NodeIPs...)
		return issued
	}
	if _, err := checkIssued(c, f.bundle.CACertPEM, node()); err != nil {
		t.Fatalf("the node's certificates alone: %v", err)
	}
	for name, tc := range map[string]struct {
		cn    string
		orgs  []string
		dns   []string
		usage x509.ExtKeyUsage
		want  string
	}{
		"right":         {DNSUser, nil, nil, x509.ExtKeyUsageClientAuth, ""},
		"another user":  {KubeProxyUser, nil, nil, x509.ExtKeyUsageClientAuth, `is for "system:kube-proxy"`},
		"with a group":  {DNSUser, []string{"system:masters"}, nil, x509.ExtKeyUsageClientAuth, `[system:masters]`},
		"with a host":   {DNSUser, nil, []string{"kubernetes"}, x509.ExtKeyUsageClientAuth, "names hosts"},
		"serving usage": {DNSUser, nil, nil, x509.ExtKeyUsageServerAuth, "incompatible key usage"},
	} {
		t.Run(name, func(t *testing.T) {
			issued := node()
			key, err := newKeyPair()
			if err != nil {
				t.Fatal(err)
			}
			issued.components = map[string]componentCert{DNSUser: {certPEM: signFor(t, f, key, tc.cn, tc.orgs, tc.dns, tc.usage), key: key}}
			live, err := checkIssued(c, f.bundle.CACertPEM, issued)
			if tc.want == "" {
				if err != nil || live.components[DNSUser] == nil {
					t.Fatalf("checkIssued: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkIssued: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// signFor has f's CA sign a certificate for key.
func signFor(t *testing.T, f *fakeServer, key keyPair, cn string, orgs, dns []string, usage x509.ExtKeyUsage, ips ...net.IP) []byte {
	t.Helper()
	csrPEM, err := pki.NewCSR(key.signer, cn, orgs, dns, ips)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.ParseCSRPEM(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, certPEM, err := f.bundle.SignCSR(csr, usage, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}
