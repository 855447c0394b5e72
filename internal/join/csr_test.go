package join

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	csrclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/pki"
)

// csrNode is a joined node whose Renewer asks a fake clientset's
// CertificateSigningRequests, with an injected clock.
type csrNode struct {
	f     *fakeServer
	clk   *clocktesting.FakeClock
	cfg   Config
	creds *Credentials
	r     *Renewer
	api   *fake.Clientset
	logs  *lockedBuffer

	mu sync.Mutex
	// requests are the CertificateSigningRequests created, as created.
	requests []*certificatesv1.CertificateSigningRequest
}

// lockedBuffer is a log a test reads while the Renewer writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newCSRNode joins n1 to a fake server whose certificates live a year.
func newCSRNode(t *testing.T) *csrNode {
	t.Helper()
	n := &csrNode{clk: clocktesting.NewFakeClock(time.Now()), api: fake.NewClientset(), logs: &lockedBuffer{}}
	n.f = newFakeServerAt(t, n.clk.Now)
	n.f.validity = pki.LeafValidity
	n.cfg = n.f.config(t, t.TempDir())
	n.cfg.Clock = n.clk
	n.cfg.Log = slog.New(slog.NewTextHandler(n.logs, nil))
	var err error
	if n.creds, err = Join(context.Background(), n.cfg); err != nil {
		t.Fatal(err)
	}
	if n.r, err = NewRenewer(n.cfg, n.creds); err != nil {
		t.Fatal(err)
	}
	n.r.csrs = func() (csrclient.CertificateSigningRequestInterface, error) {
		return n.api.CertificatesV1().CertificateSigningRequests(), nil
	}
	n.answer(func(csr *certificatesv1.CertificateSigningRequest) {
		n.mu.Lock()
		defer n.mu.Unlock()
		sent := csr.DeepCopy()
		sent.Status = certificatesv1.CertificateSigningRequestStatus{} // what answers added
		n.requests = append(n.requests, sent)
	})
	return n
}

// answer calls do with each CertificateSigningRequest created, before it
// is stored: do may change it as a certificates controller would (issue,
// deny). The answer given last runs first.
func (n *csrNode) answer(do func(*certificatesv1.CertificateSigningRequest)) {
	n.api.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		do(a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest))
		return false, nil, nil // stored as do left it
	})
}

// created are the CertificateSigningRequests the node created, as created.
func (n *csrNode) created() []*certificatesv1.CertificateSigningRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.requests)
}

// refuseJoin makes the join endpoint answer code to every request.
func (n *csrNode) refuseJoin(code int) {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	n.f.answer = func(w http.ResponseWriter, _ CertificatesRequest, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Message: "the join token's secret is wrong", Code: int32(code)})
	}
}

// tlsFile reads a file of data-dir/agent/tls.
func (n *csrNode) tlsFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.cfg.DataDir, "agent", "tls", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// untouched are the files a renewal of the client certificate alone
// leaves as they are.
func untouched() []string {
	files := []string{ServingCertFile, ServingKeyFile, ComponentsFile, ClusterFile, CACertFile}
	for _, user := range ComponentUsers() {
		files = append(files, ComponentCertFile(user), ComponentKeyFile(user))
	}
	return files
}

// issue has f's CA (the cluster CA) sign the request, as the signer of
// kubernetes.io/kube-apiserver-client-kubelet does once it is approved;
// change (nil: none) alters the request first.
func issue(t *testing.T, f *fakeServer, change func(*x509.CertificateRequest)) func(*certificatesv1.CertificateSigningRequest) {
	return issueBy(t, f.bundle, change)
}

func issueBy(t *testing.T, ca *pki.Bundle, change func(*x509.CertificateRequest)) func(*certificatesv1.CertificateSigningRequest) {
	return func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: "test"})
		csr.Status.Certificate = signRequest(t, ca, csr, change)
	}
}

// signRequest is the certificate ca signs for csr's request (changed by
// change, unless nil), PEM.
func signRequest(t *testing.T, ca *pki.Bundle, csr *certificatesv1.CertificateSigningRequest, change func(*x509.CertificateRequest)) []byte {
	req, err := pki.ParseCSRPEM(csr.Spec.Request)
	if err != nil {
		t.Error(err)
		return nil
	}
	if change != nil {
		change(req)
	}
	_, certPEM, err := ca.SignCSR(req, x509.ExtKeyUsageClientAuth, pki.LeafValidity)
	if err != nil {
		t.Error(err)
	}
	return certPEM
}

// refuse gives the request a condition of kind (Denied, Failed).
func refuse(kind certificatesv1.RequestConditionType, reason, message string) func(*certificatesv1.CertificateSigningRequest) {
	return func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: kind, Status: corev1.ConditionTrue, Reason: reason, Message: message})
	}
}

// nineMonths is past two thirds of the certificates' year.
const nineMonths = 9 * 30 * 24 * time.Hour

// TestCSRRenewalWhenTheJoinEndpointRefuses: with the join token refused
// and the certificates due, the client certificate alone is renewed
// through a CertificateSigningRequest for a new key, stored, put in the
// kubeconfig and handed out by the TLS callback; the serving and
// component certificates stay as they were.
func TestCSRRenewalWhenTheJoinEndpointRefuses(t *testing.T) {
	n := newCSRNode(t)
	n.answer(issue(t, n.f, nil))
	n.refuseJoin(http.StatusUnauthorized)
	oldClient, oldServing := n.creds.ClientCertificate(), n.creds.ServingCertificate()
	oldComponents := map[string]*x509.Certificate{}
	for _, user := range ComponentUsers() {
		oldComponents[user] = n.creds.clientCertificateFor(user).Leaf
	}
	before := map[string][]byte{}
	for _, name := range untouched() {
		before[name] = n.tlsFile(t, name)
	}
	n.clk.Step(nineMonths)

	byCSR, err := n.r.renewDue(context.Background())
	if err != nil || !byCSR {
		t.Fatalf("renewDue = %v, %v; want renewed through a CertificateSigningRequest", byCSR, err)
	}

	// The request.
	created := n.created()
	if len(created) != 1 {
		t.Fatalf("%d CertificateSigningRequests created, want 1", len(created))
	}
	csr := created[0]
	if !strings.HasPrefix(csr.Name, "node-csr-") {
		t.Errorf("request named %q, want node-csr-…", csr.Name)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || csr.Spec.ExpirationSeconds != nil {
		t.Errorf("signer %q, expirationSeconds %v; want %s and the signer's default", csr.Spec.SignerName, csr.Spec.ExpirationSeconds, certificatesv1.KubeAPIServerClientKubeletSignerName)
	}
	if want := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}; !slices.Equal(csr.Spec.Usages, want) {
		t.Errorf("usages %v, want %v (an ECDSA key: no key encipherment)", csr.Spec.Usages, want)
	}
	req, err := pki.ParseCSRPEM(csr.Spec.Request)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:node:n1" || !slices.Equal(req.Subject.Organization, []string{NodesGroup}) ||
		len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		t.Errorf("request for %v with SANs %v %v %v %v, want CN=system:node:n1, O=system:nodes and none",
			req.Subject, req.DNSNames, req.IPAddresses, req.EmailAddresses, req.URIs)
	}
	if _, isECDSA := req.PublicKey.(*ecdsa.PublicKey); !isECDSA {
		t.Errorf("request for a %T key, want the key type of the others (ECDSA)", req.PublicKey)
	}

	// The new certificate is current, for the request's new key.
	client := n.creds.ClientCertificate()
	if client.Leaf.Equal(oldClient.Leaf) {
		t.Fatal("the client certificate was not swapped")
	}
	if !client.Leaf.PublicKey.(*ecdsa.PublicKey).Equal(req.PublicKey) || client.Leaf.PublicKey.(*ecdsa.PublicKey).Equal(oldClient.Leaf.PublicKey) {
		t.Error("the new client certificate is not for the request's new key")
	}
	if got, err := n.creds.ClientTLSConfig().GetClientCertificate(nil); err != nil || !got.Leaf.Equal(client.Leaf) {
		t.Error("the client TLS callback does not hand out the new certificate")
	}
	if !client.Leaf.NotAfter.After(oldClient.Leaf.NotAfter) || !n.creds.clientRenewAt().After(n.clk.Now()) {
		t.Errorf("the new client certificate expires %s (the old %s), due %s", client.Leaf.NotAfter, oldClient.Leaf.NotAfter, n.creds.clientRenewAt())
	}

	// Stored, and in the kubeconfig.
	if cert, err := pki.ParseCertificatePEM(n.tlsFile(t, ClientCertFile)); err != nil || !cert.Equal(client.Leaf) {
		t.Errorf("stored client certificate is not the new one: %v", err)
	}
	if key, err := pki.ParsePrivateKeyPEM(n.tlsFile(t, ClientKeyFile)); err != nil || !pki.KeyMatches(key, client.Leaf) {
		t.Errorf("stored client key is not the new certificate's: %v", err)
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(n.cfg.DataDir, "agent", KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if cert, err := pki.ParseCertificatePEM(kc.AuthInfos[pki.KubeconfigName].ClientCertificateData); err != nil || !cert.Equal(client.Leaf) {
		t.Errorf("kubeconfig does not hold the new client certificate: %v", err)
	}

	// The serving and component certificates are the old ones.
	if !n.creds.ServingCertificate().Leaf.Equal(oldServing.Leaf) {
		t.Error("the serving certificate changed")
	}
	for user, old := range oldComponents {
		if !n.creds.HasIdentity(user) || !n.creds.clientCertificateFor(user).Leaf.Equal(old) {
			t.Errorf("the certificate of %s changed", user)
		}
	}
	for name, data := range before {
		if !bytes.Equal(n.tlsFile(t, name), data) {
			t.Errorf("%s changed", name)
		}
	}
	if n.creds.renewAt().After(n.clk.Now()) {
		t.Errorf("renewAt %s, want now: the serving and component certificates are still due", n.creds.renewAt())
	}

	// The log says which way, and why.
	if logs := n.logs.String(); !strings.Contains(logs, "renewed the node's client certificate through a CertificateSigningRequest (the join endpoint refused: ") ||
		!strings.Contains(logs, "refused the join token") || !strings.Contains(logs, "renewed only through the join endpoint") {
		t.Errorf("log %q does not say the client certificate was renewed through a CertificateSigningRequest and why", logs)
	}

	// A restart uses the renewed files without asking anyone.
	posts := len(n.f.recorded())
	again, err := Join(context.Background(), n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !again.ClientCertificate().Leaf.Equal(client.Leaf) || !again.ServingCertificate().Leaf.Equal(oldServing.Leaf) {
		t.Error("a restart does not use the renewed client certificate and the kept serving one")
	}
	if len(n.f.recorded()) != posts {
		t.Error("a restart asked the server")
	}
}

// TestCSRRenewalOnlyWhenTheJoinEndpointRefusesForGood: no request is made
// when the join endpoint renews, when it fails in a way retrying fixes,
// or when the client certificate is not due.
func TestCSRRenewalOnlyWhenTheJoinEndpointRefusesForGood(t *testing.T) {
	for name, tc := range map[string]struct {
		code  int // 0: the join endpoint signs
		step  time.Duration
		is    error
		byCSR bool
	}{
		"join renews":                   {0, nineMonths, nil, false},
		"join unavailable (retried)":    {http.StatusServiceUnavailable, nineMonths, ErrUnreachable, false},
		"join busy (retried)":           {http.StatusTooManyRequests, nineMonths, ErrUnreachable, false},
		"token refused, client not due": {http.StatusUnauthorized, 0, ErrUnauthorized, false},
		"token refused, client due":     {http.StatusUnauthorized, nineMonths, nil, true},
		"node name taken, client due":   {http.StatusConflict, nineMonths, nil, true},
		"request rejected, client due":  {http.StatusBadRequest, nineMonths, nil, true},
	} {
		t.Run(name, func(t *testing.T) {
			n := newCSRNode(t)
			n.answer(issue(t, n.f, nil))
			if tc.code != 0 {
				n.refuseJoin(tc.code)
			}
			n.clk.Step(tc.step)
			byCSR, err := n.r.renewDue(context.Background())
			if byCSR != tc.byCSR || !errors.Is(err, tc.is) {
				t.Fatalf("renewDue = %v, %v; want %v, %v", byCSR, err, tc.byCSR, tc.is)
			}
			if got, want := len(n.created()), map[bool]int{true: 1}[tc.byCSR]; got != want {
				t.Errorf("%d CertificateSigningRequests created, want %d", got, want)
			}
		})
	}
}

// TestCSRRefused: a denied or failed request is an error naming the
// condition's reason and message; nothing changes.
func TestCSRRefused(t *testing.T) {
	for _, tc := range []struct {
		kind            certificatesv1.RequestConditionType
		reason, message string
		want            string
	}{
		{certificatesv1.CertificateDenied, "NotThisNode", "ask the administrator", `was denied: reason "NotThisNode", message "ask the administrator"`},
		{certificatesv1.CertificateFailed, "SignerValidationFailure", "subject organization is not system:nodes",
			`was failed: reason "SignerValidationFailure", message "subject organization is not system:nodes"`},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			n := newCSRNode(t)
			n.answer(refuse(tc.kind, tc.reason, tc.message))
			n.refuseJoin(http.StatusUnauthorized)
			old := n.creds.ClientCertificate()
			oldFile := n.tlsFile(t, ClientCertFile)
			n.clk.Step(nineMonths)

			_, err := n.r.renewClientByCSR(context.Background())
			if !errors.Is(err, ErrCSRRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("renewClientByCSR: %v, want ErrCSRRefused saying %q", err, tc.want)
			}
			byCSR, err := n.r.renewDue(context.Background())
			if byCSR || !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("renewDue = %v, %v; want the join endpoint's refusal and the request's %q", byCSR, err, tc.want)
			}
			if n.creds.ClientCertificate() != old || !bytes.Equal(n.tlsFile(t, ClientCertFile), oldFile) {
				t.Error("a refused request changed the client certificate")
			}
		})
	}
}

// TestCSRCertificateChecked: an issued certificate that does not fit the
// node (another node's, another CA's) is refused; nothing changes.
func TestCSRCertificateChecked(t *testing.T) {
	other, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "other", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		ca     *pki.Bundle // nil: the cluster CA
		change func(*x509.CertificateRequest)
		want   string
	}{
		"another node's":    {nil, func(r *x509.CertificateRequest) { r.Subject.CommonName = "system:node:n2" }, `is for "system:node:n2"`},
		"without the group": {nil, func(r *x509.CertificateRequest) { r.Subject.Organization = nil }, `not "system:node:n1" in [system:nodes]`},
		"another CA's":      {other, nil, "unknown authority"},
	} {
		t.Run(name, func(t *testing.T) {
			n := newCSRNode(t)
			ca := tc.ca
			if ca == nil {
				ca = n.f.bundle
			}
			n.answer(issueBy(t, ca, tc.change))
			old := n.creds.ClientCertificate()
			n.clk.Step(nineMonths)
			_, err := n.r.renewClientByCSR(context.Background())
			if err == nil || !strings.Contains(err.Error(), "does not fit") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("renewClientByCSR: %v, want an error saying it does not fit: %q", err, tc.want)
			}
			if n.creds.ClientCertificate() != old {
				t.Error("a certificate that does not fit was made current")
			}
		})
	}
}

// pendingGets makes Get answer the request as created, without what was
// done to it since, and tells got after each: what the Renewer learns
// after that comes through its watch, which was open before.
func (n *csrNode) pendingGets(got chan<- *certificatesv1.CertificateSigningRequest) {
	n.api.PrependReactor("get", "certificatesigningrequests", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		for _, csr := range n.created() {
			if csr.Name == a.(k8stesting.GetAction).GetName() {
				got <- csr.DeepCopy()
				return true, csr.DeepCopy(), nil
			}
		}
		return false, nil, nil
	})
}

// TestCSRWatchedUntilIssued: the Renewer waits on its watch for the
// request to be issued.
func TestCSRWatchedUntilIssued(t *testing.T) {
	n := newCSRNode(t)
	got := make(chan *certificatesv1.CertificateSigningRequest, 1)
	n.pendingGets(got)
	n.clk.Step(nineMonths)
	old := n.creds.ClientCertificate()
	done := make(chan error, 1)
	go func() {
		_, err := n.r.renewClientByCSR(context.Background())
		done <- err
	}()
	csr := <-got
	issue(t, n.f, nil)(csr)
	if _, err := n.api.CertificatesV1().CertificateSigningRequests().UpdateStatus(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cert := n.creds.ClientCertificate(); cert == old || !bytes.Equal(cert.Certificate[0], mustCert(t, csr.Status.Certificate).Raw) {
		t.Error("the certificate issued on the watch is not current")
	}
}

// TestCSRWaitIsBounded: a request nobody answers is given up after
// csrWait on the injected clock, with an error that says what to check.
func TestCSRWaitIsBounded(t *testing.T) {
	n := newCSRNode(t)
	got := make(chan *certificatesv1.CertificateSigningRequest, 1)
	n.pendingGets(got)
	done := make(chan error, 1)
	go func() {
		_, err := n.r.renewClientByCSR(context.Background())
		done <- err
	}()
	<-got // the deadline is set before the watch and the read
	n.clk.Step(csrWait)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "was not issued within 5m0s") || !strings.Contains(err.Error(), "certificatesigningrequests/selfnodeclient") {
		t.Fatalf("renewClientByCSR: %v, want a timeout naming the permission to check", err)
	}
	if n.clk.HasWaiters() {
		t.Error("the deadline's timer was left behind")
	}
}

// TestRenewerAfterCSRRenewal: after renewing the client certificate through
// a request, the Renewer asks the join endpoint again only after
// permanentRetry, and makes no second request while the client
// certificate is not due.
func TestRenewerAfterCSRRenewal(t *testing.T) {
	n := newCSRNode(t)
	n.answer(issue(t, n.f, nil))
	n.refuseJoin(http.StatusUnauthorized)
	old := n.creds.ClientCertificate()
	n.clk.Step(nineMonths)
	joined := len(n.f.recorded()) // the join's
	posts := func() int {
		count := 0
		for _, r := range n.f.recorded()[joined:] {
			if r.path == CertificatesPath {
				count++
			}
		}
		return count
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.r.Start(ctx) }()
	defer func() { cancel(); <-done }()

	// Renewed through a request; then waiting.
	waitUntil(t, "the client certificate renewed through a request, then a wait", func() bool {
		return n.creds.ClientCertificate() != old && n.clk.HasWaiters()
	})
	if got := len(n.created()); got != 1 || posts() != 1 {
		t.Fatalf("%d requests and %d join attempts, want 1 and 1", got, posts())
	}
	n.clk.Step(permanentRetry - time.Second)
	if posts() != 1 {
		t.Fatal("the join endpoint was asked again before permanentRetry")
	}
	// The serving certificate is still due: the join endpoint is asked
	// again, refuses again, and no second request is made.
	n.clk.Step(time.Second)
	waitUntil(t, "a second join attempt, then a wait", func() bool { return posts() == 2 && n.clk.HasWaiters() })
	if got := len(n.created()); got != 1 {
		t.Errorf("%d requests, want 1 (the client certificate is not due)", got)
	}
}

// waitUntil yields until cond holds (the code under test runs on other
// goroutines and waits on the fake clock; nothing here sleeps).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func mustCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestClientUsages(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := clientUsages(rsaKey), []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}; !slices.Equal(got, want) {
		t.Errorf("RSA: %v, want %v", got, want)
	}
	if got, want := clientUsages(ecKey), []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}; !slices.Equal(got, want) {
		t.Errorf("ECDSA: %v, want %v", got, want)
	}
}

// TestCSRClientActsAsTheNode: the Renewer's requests go as the node,
// straight to the server: not through the local store that Through puts
// in front of RESTConfig.
func TestCSRClientActsAsTheNode(t *testing.T) {
	f := newFakeServer(t)
	creds, err := Join(context.Background(), f.config(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	through := 0
	creds.Through(func(c *rest.Config) *rest.Config { through++; return c })
	creds.RESTConfig()
	if got := whoami(t, creds.nodeRESTConfig()); got != "system:node:n1" || through != 1 {
		t.Errorf("the Renewer's client acts as %q, changed by Through %d times (RESTConfig once); want the node, straight", got, through)
	}
}
