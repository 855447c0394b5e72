package certificates

import (
	"crypto/x509"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"orch/internal/controller"
	"orch/internal/envtest"
)

// certificateValid is a certificate (PEM) valid from issued for ttl.
func certificateValid(t *testing.T, ca CA, issued time.Time, ttl time.Duration) []byte {
	t.Helper()
	req, err := parseRequest(requestPEM(t, newKey(t), &x509.CertificateRequest{Subject: nodeSubject("n1")}))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.issue(req, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ttl, issued)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}

func TestCleanupReason(t *testing.T) {
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	ca := newCA(t, now.Add(365*24*time.Hour))
	valid := certificateValid(t, ca, now.Add(-2*time.Hour), 24*time.Hour)
	expiredCert := certificateValid(t, ca, now.Add(-3*time.Hour), time.Hour)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(typ certificatesv1.RequestConditionType, updated metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: "True", LastUpdateTime: updated}
	}
	csr := func(created metav1.Time, cert []byte, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: created},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: cert}}
	}
	approved, denied, failed := certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed
	tests := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want string
	}{
		{"pending, new", csr(ago(time.Hour), nil), ""},
		{"pending, 23 hours", csr(ago(23*time.Hour), nil), ""},
		{"pending, 25 hours", csr(ago(25*time.Hour), nil), "pending for more than 24h0m0s"},
		{"pending, no creation time", csr(metav1.Time{}, nil), ""},
		{"issued, approved 30 minutes ago", csr(ago(2*time.Hour), valid, cond(approved, ago(30*time.Minute))), ""},
		{"issued, approved 2 hours ago", csr(ago(2*time.Hour), valid, cond(approved, ago(2*time.Hour))), "issued more than 1h0m0s ago"},
		{"issued, approval without time", csr(ago(48*time.Hour), valid, cond(approved, metav1.Time{})), ""},
		{"issued, certificate expired", csr(ago(2*time.Hour), expiredCert, cond(approved, ago(30*time.Minute))), "its certificate has expired"},
		{"issued, certificate does not parse", csr(ago(2*time.Hour), []byte("junk"), cond(approved, ago(30*time.Minute))), ""},
		{"denied 30 minutes ago", csr(ago(48*time.Hour), nil, cond(denied, ago(30*time.Minute))), ""},
		{"denied 2 hours ago", csr(ago(48*time.Hour), nil, cond(denied, ago(2*time.Hour))), "denied more than 1h0m0s ago"},
		{"failed 2 hours ago", csr(ago(48*time.Hour), nil, cond(approved, ago(3*time.Hour)), cond(failed, ago(2*time.Hour))), "failed more than 1h0m0s ago"},
		{"failed 10 minutes ago", csr(ago(48*time.Hour), nil, cond(approved, ago(3*time.Hour)), cond(failed, ago(10*time.Minute))), ""},
		{"approved 2 hours ago, not issued", csr(ago(48*time.Hour), nil, cond(approved, ago(2*time.Hour))), ""},
		{"approved 25 hours ago, never issued", csr(ago(48*time.Hour), nil, cond(approved, ago(25*time.Hour))), "approved more than 24h0m0s ago and never issued"},
	}
	for _, tt := range tests {
		if got := CleanupReason(tt.csr, now); got != tt.want {
			t.Errorf("%s: CleanupReason = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestCleanerRuns: the cleaner looks once it starts, then every hour of
// the injected clock.
func TestCleanerRuns(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC))
	pending := func(name string, age time.Duration) runtime.Object {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(clk.Now().Add(-age))}}
	}
	client := fake.NewClientset(pending("old", 25*time.Hour), pending("young", 23*time.Hour+30*time.Minute))
	ctx := controller.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Clock: clk}.WithDefaults()
	c, err := New(ctx, newCA(t, clk.Now().Add(time.Hour)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Env{Informers: ctx.Informers}
	env.Start(t, c)
	deleted := func() []string {
		var names []string
		for _, a := range client.Actions() {
			if d, ok := a.(clienttesting.DeleteAction); ok {
				names = append(names, d.GetName())
			}
		}
		return names
	}
	envtest.EventuallyTrue(t, "the 25 hours old pending request to be deleted", func() bool { return len(deleted()) == 1 && deleted()[0] == "old" })
	// The cleaner made its ticker before its first round.
	clk.Step(cleanInterval)
	envtest.EventuallyTrue(t, "the other request to be deleted an hour later", func() bool { return len(deleted()) == 2 && deleted()[1] == "young" })
}
