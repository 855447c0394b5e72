package certificates

import (
	"context"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	csrclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/envtest"
	"orch/internal/pki"
)

// TestAgainstAPIServer runs the controllers against a real apiserver (with
// the bootstrap RBAC policy, so that access reviews mean something) and the
// cluster CA as `orch server` makes it.
func TestAgainstAPIServer(t *testing.T) {
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "server"})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(bundle.CACertPEM, bundle.CAKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := envtest.StartWith(t, envtest.Options{RBAC: true})
	client := kubernetes.NewForConfigOrDie(srv.Config)
	env := &envtest.Env{Server: srv, Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Log: envtest.Logger(), Clock: clock.RealClock{}}
	c, err := New(controller.Context{Client: client, Informers: env.Informers, Log: env.Log, Clock: env.Clock}.WithDefaults(), ca, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t, c)
	csrs := client.CertificatesV1().CertificateSigningRequests()
	ctx := t.Context()
	roots := x509.NewCertPool()
	roots.AddCert(bundle.CA)

	t.Run("an approved client certificate is issued", func(t *testing.T) {
		key := newKey(t)
		create(t, csrs, "alice", key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice", Organization: []string{"devs"}}},
			certificatesv1.KubeAPIServerClientSignerName, ptr.To[int32](3600), certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
		approveByHand(t, csrs, "alice")
		cert := waitCertificate(t, csrs, "alice")
		if cert.Subject.CommonName != "alice" || !slices.Equal(cert.Subject.Organization, []string{"devs"}) {
			t.Errorf("subject %v", cert.Subject)
		}
		if cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("usages %b %v", cert.KeyUsage, cert.ExtKeyUsage)
		}
		if cert.Issuer.String() != bundle.CA.Subject.String() {
			t.Errorf("issuer %v, want %v", cert.Issuer, bundle.CA.Subject)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("does not verify against the cluster CA: %v", err)
		}
		if !key.PublicKey.Equal(cert.PublicKey) {
			t.Error("the certificate is not for the request's key")
		}
		if got := cert.NotAfter.Sub(cert.NotBefore); got != time.Hour+backdate {
			t.Errorf("valid for %v, want expirationSeconds (1h) plus the 5 minutes backdate", got)
		}
	})

	t.Run("a serving request without SANs fails", func(t *testing.T) {
		create(t, csrs, "no-sans", newKey(t), &x509.CertificateRequest{Subject: nodeSubject("n1")},
			certificatesv1.KubeletServingSignerName, nil, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
		approveByHand(t, csrs, "no-sans")
		var failed certificatesv1.CertificateSigningRequestCondition
		envtest.Eventually(t, "the request to fail", func() (bool, error) {
			csr, err := csrs.Get(ctx, "no-sans", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateFailed {
					failed = c
					return len(csr.Status.Certificate) == 0, nil
				}
			}
			return false, nil
		})
		if failed.Status != corev1.ConditionTrue || failed.Reason != "SignerValidationFailure" || failed.Message != "DNS or IP subjectAltName is required" {
			t.Errorf("Failed condition %+v", failed)
		}
	})

	t.Run("a node's renewal is approved and issued", func(t *testing.T) {
		// As kubeadm does: nodes may have their own client certificates
		// renewed without an administrator.
		_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-autoapprove-renewal"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:nodes"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bootstrappers"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:bootstrappers"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A bootstrapper may create a request but nobody let it have one
		// approved (no nodeclient binding).
		bootstrapper := kubernetes.NewForConfigOrDie(srv.ConfigAs("system:bootstrap:abcdef", "system:bootstrappers")).CertificatesV1().CertificateSigningRequests()
		node := kubernetes.NewForConfigOrDie(srv.ConfigAs("system:node:x", "system:nodes")).CertificatesV1().CertificateSigningRequests()
		envtest.Eventually(t, "the authorizer to see the bindings", func() (bool, error) {
			_, err := bootstrapper.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-y"},
				Spec: certificatesv1.CertificateSigningRequestSpec{Request: requestPEM(t, newKey(t), &x509.CertificateRequest{Subject: nodeSubject("y")}),
					SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Usages: nodeClientUsages}}, metav1.CreateOptions{})
			return err == nil, err
		})
		create(t, node, "node-x", newKey(t), &x509.CertificateRequest{Subject: nodeSubject("x")},
			certificatesv1.KubeAPIServerClientKubeletSignerName, nil, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
		cert := waitCertificate(t, csrs, "node-x")
		csr, err := csrs.Get(ctx, "node-x", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if csr.Spec.Username != "system:node:x" {
			t.Errorf("requestor %q, want the impersonated node", csr.Spec.Username)
		}
		if !hasCondition(csr, certificatesv1.CertificateApproved, "AutoApproved", "Auto approving self kubelet client certificate after SubjectAccessReview.") {
			t.Errorf("conditions %+v, want AutoApproved", csr.Status.Conditions)
		}
		if cert.Subject.CommonName != "system:node:x" || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("certificate %v %v", cert.Subject, cert.ExtKeyUsage)
		}
		if got := cert.NotAfter.Sub(cert.NotBefore); got != DefaultMaxDuration {
			t.Errorf("valid for %v, want the default maximum", got)
		}
		if pending, err := csrs.Get(ctx, "bootstrap-y", metav1.GetOptions{}); err != nil || len(pending.Status.Conditions) != 0 {
			t.Errorf("the bootstrapper's request: %v, conditions %+v; want it left pending", err, pending.Status.Conditions)
		}
	})
}

// create creates request name for tmpl, signed by key.
func create(t *testing.T, csrs csrclient.CertificateSigningRequestInterface, name string, key crypto.Signer, tmpl *x509.CertificateRequest, signer string,
	expirationSeconds *int32, usages ...certificatesv1.KeyUsage) {
	t.Helper()
	envtest.Create(t, csrs.Create, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: requestPEM(t, key, tmpl), SignerName: signer,
			ExpirationSeconds: expirationSeconds, Usages: usages}})
}

// approveByHand approves request name through /approval, as
// `kubectl certificate approve` does.
func approveByHand(t *testing.T, csrs csrclient.CertificateSigningRequestInterface, name string) {
	t.Helper()
	envtest.Update(t, name, csrs.Get, func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error) {
		return csrs.UpdateApproval(ctx, csr.Name, csr, opts)
	}, func(csr *certificatesv1.CertificateSigningRequest) {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove", Message: "approved by the test"})
	})
}

// waitCertificate waits for request name to be issued its certificate.
func waitCertificate(t *testing.T, csrs csrclient.CertificateSigningRequestInterface, name string) *x509.Certificate {
	t.Helper()
	var certPEM []byte
	envtest.Eventually(t, "the certificate of "+name, func() (bool, error) {
		csr, err := csrs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		certPEM = csr.Status.Certificate
		return len(certPEM) > 0, nil
	})
	return parseCert(t, certPEM)
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType, reason, message string) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message {
			return true
		}
	}
	return false
}
