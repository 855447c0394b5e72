package apiserver_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/apiserver"
	"orch/internal/apiserver/authz"
	"orch/internal/envtest"
)

func TestDeletedNodesCertificatesAreRefused(t *testing.T) {
	srv := envtest.StartWith(t, envtest.Options{NodeRegistrationSecret: func(node string) (string, string) { return "kube-system", node + ".registration" }})
	client := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := authz.User{Name: "system:node:a", Groups: []string{"system:nodes", "system:authenticated"}}
	cert := func(notBefore time.Time, units ...string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: node.Name, Organization: []string{"system:nodes"}, OrganizationalUnit: units}, NotBefore: notBefore}
	}
	issued := time.Now().Add(-time.Hour) // the CA backdates by an hour

	if err := srv.API.CheckCertificate(ctx, cert(issued), node); err == nil {
		t.Fatal("a node that never registered: accepted")
	}
	secret, err := client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a.registration"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*x509.Certificate{
		"issued for this registration": cert(issued, apiserver.NodeRegistrationUnit+string(secret.UID)),
		"without a registration unit":  cert(issued),
	} {
		if err := srv.API.CheckCertificate(ctx, c, node); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, c := range map[string]*x509.Certificate{
		"issued for another registration": cert(issued, apiserver.NodeRegistrationUnit+"0000"),
		"older than the registration":     cert(issued.Add(-2 * time.Hour)),
	} {
		if err := srv.API.CheckCertificate(ctx, c, node); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := client.CoreV1().Secrets("kube-system").Delete(ctx, "a.registration", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the deleted registration's certificate to be refused", func() bool {
		return srv.API.CheckCertificate(ctx, cert(issued, apiserver.NodeRegistrationUnit+string(secret.UID)), node) != nil
	})
	// Other users are not checked.
	admin := authz.User{Name: "jane"}
	if err := srv.API.CheckCertificate(ctx, &x509.Certificate{Subject: pkix.Name{CommonName: "jane"}}, admin); err != nil {
		t.Errorf("a user's certificate: %v", err)
	}
}
