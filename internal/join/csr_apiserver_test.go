package join

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	csrclient "k8s.io/client-go/kubernetes/typed/certificates/v1"

	"orch/internal/envtest"
	"orch/internal/pki"
)

// TestCSRRenewalAgainstAPIServer: the request the Renewer makes as the
// node passes the real apiserver's validation and authorization (the Node
// authorizer, and RBAC with the bootstrap policy), and the policy lets the
// node have it approved: the access review the certificates controller
// makes before it approves a node's request for itself
// (certificatesigningrequests/selfnodeclient) allows it. The test then
// approves and signs it, as the controller would (internal/join imports
// no controller; `orch server` runs the real one end to end).
func TestCSRRenewalAgainstAPIServer(t *testing.T) {
	srv := envtest.StartWith(t, envtest.Options{RBAC: true})
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	n := newCSRNode(t)
	n.r.csrs = func() (csrclient.CertificateSigningRequestInterface, error) {
		// As the node, as its client certificate makes it: the apiserver
		// here takes no client certificates, so the admin impersonates it.
		node, err := kubernetes.NewForConfig(srv.ConfigAs(NodeUser(n.cfg.NodeName), NodesGroup))
		if err != nil {
			return nil, err
		}
		return node.CertificatesV1().CertificateSigningRequests(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, should it hang
	defer cancel()
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	w, err := csrs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	old := n.creds.ClientCertificate()
	done := make(chan error, 1)
	go func() {
		_, err := n.r.renewClientByCSR(ctx)
		done <- err
	}()

	var csr *certificatesv1.CertificateSigningRequest
	for csr == nil {
		select {
		case err := <-done:
			t.Fatalf("renewClientByCSR ended before a request was made: %v", err)
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatal("the watch ended")
			}
			if ev.Type == watch.Added {
				csr = ev.Object.(*certificatesv1.CertificateSigningRequest)
			}
		}
	}

	// What the approver looks at: a node's request for itself …
	req, err := pki.ParseCSRPEM(csr.Spec.Request)
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != "system:node:n1" || !slices.Contains(csr.Spec.Groups, NodesGroup) || req.Subject.CommonName != csr.Spec.Username {
		t.Fatalf("request by %q in %v for %q; want the node's for itself", csr.Spec.Username, csr.Spec.Groups, req.Subject.CommonName)
	}
	// … whose requester may have it approved; asking for another node's
	// certificate it may not.
	for subresource, want := range map[string]bool{"selfnodeclient": true, "nodeclient": false} {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: csr.Spec.Username, Groups: csr.Spec.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Version: "*", Resource: "certificatesigningrequests",
				Subresource: subresource, Verb: "create"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != want {
			t.Errorf("may the node create certificatesigningrequests/%s: %v (%s), want %v", subresource, review.Status.Allowed, review.Status.Reason, want)
		}
	}

	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: "approved by the test"})
	if csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	csr.Status.Certificate = signRequest(t, n.f.bundle, csr, nil)
	if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cert := n.creds.ClientCertificate(); cert == old || !cert.Leaf.Equal(mustCert(t, csr.Status.Certificate)) {
		t.Error("the certificate the apiserver holds is not the current one")
	}
}
