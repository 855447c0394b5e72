package certificates

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"orch/internal/controller"
	"orch/internal/worker"
)

var nodeClientUsagesRSA = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}

// request is a CSR named name by user for subject, to signer.
func request(t *testing.T, name, user, signer string, subject pkix.Name, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t, newKey(t), &x509.CertificateRequest{Subject: subject}),
			SignerName: signer, Usages: usages, Username: user, UID: "uid-1",
			Groups: []string{"system:nodes", "system:authenticated"},
			Extra:  map[string]certificatesv1.ExtraValue{"scope": {"a"}},
		}}
}

func TestRecognized(t *testing.T) {
	kubelet := certificatesv1.KubeAPIServerClientKubeletSignerName
	tests := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want []string
	}{
		{"node renewing its own", request(t, "a", "system:node:n1", kubelet, nodeSubject("n1"), nodeClientUsages), []string{"selfnodeclient", "nodeclient"}},
		{"node renewing its own, RSA usages", request(t, "a", "system:node:n1", kubelet, nodeSubject("n1"), nodeClientUsagesRSA), []string{"selfnodeclient", "nodeclient"}},
		{"bootstrap token asking for a node", request(t, "a", "system:bootstrap:abcdef", kubelet, nodeSubject("n1"), nodeClientUsages), []string{"nodeclient"}},
		{"node asking for another node", request(t, "a", "system:node:n2", kubelet, nodeSubject("n1"), nodeClientUsages), []string{"nodeclient"}},
		{"breaks the node client rules", request(t, "a", "system:node:n1", kubelet, pkix.Name{CommonName: "system:node:n1"}, nodeClientUsages), nil},
		{"wrong usages", request(t, "a", "system:node:n1", kubelet, nodeSubject("n1"), []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}), nil},
		{"another signer", request(t, "a", "system:node:n1", certificatesv1.KubeAPIServerClientSignerName, nodeSubject("n1"), nodeClientUsages), nil},
		{"serving", request(t, "a", "system:node:n1", certificatesv1.KubeletServingSignerName, nodeSubject("n1"), nodeClientUsages), nil},
	}
	for _, tt := range tests {
		req, err := parseRequest(tt.csr.Spec.Request)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recognized(tt.csr, req) {
			got = append(got, r.subresource)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: recognized %v, want %v", tt.name, got, tt.want)
		}
	}
}

// approverWith is a Controller on a fake clientset holding csrs (also in
// the informer's cache), whose SubjectAccessReviews allow the permissions
// (subresources) allowed.
func approverWith(t *testing.T, allowed []string, csrs ...*certificatesv1.CertificateSigningRequest) (*Controller, *fake.Clientset) {
	objs := make([]runtime.Object, len(csrs))
	for i, csr := range csrs {
		objs[i] = csr
	}
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status.Allowed = slices.Contains(allowed, sar.Spec.ResourceAttributes.Subresource)
		return true, sar, nil
	})
	ctx := controller.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0)}.WithDefaults()
	c, err := New(ctx, newCA(t, time.Now().Add(time.Hour)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	indexer := ctx.Informers.Certificates().V1().CertificateSigningRequests().Informer().GetIndexer()
	for _, csr := range csrs {
		if err := indexer.Add(csr); err != nil {
			t.Fatal(err)
		}
	}
	return c, client
}

// reviews are the SubjectAccessReviews client asked for.
func reviews(client *fake.Clientset) []*authorizationv1.SubjectAccessReview {
	var out []*authorizationv1.SubjectAccessReview
	for _, a := range client.Actions() {
		if a.Matches("create", "subjectaccessreviews") {
			out = append(out, a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview))
		}
	}
	return out
}

// approvals are the writes of client through the approval subresource.
func approvals(client *fake.Clientset) []*certificatesv1.CertificateSigningRequest {
	var out []*certificatesv1.CertificateSigningRequest
	for _, a := range client.Actions() {
		if a.Matches("update", "certificatesigningrequests") && a.GetSubresource() == "approval" {
			out = append(out, a.(clienttesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest))
		}
	}
	return out
}

func TestApprove(t *testing.T) {
	kubelet := certificatesv1.KubeAPIServerClientKubeletSignerName
	t.Run("a node renewing its own certificate", func(t *testing.T) {
		c, client := approverWith(t, []string{"selfnodeclient"}, request(t, "renew", "system:node:n1", kubelet, nodeSubject("n1"), nodeClientUsages))
		if res, err := c.approve(t.Context(), "renew"); err != nil || res != (worker.Result{}) {
			t.Fatalf("approve = %+v, %v", res, err)
		}
		sars := reviews(client)
		if len(sars) != 1 {
			t.Fatalf("%d access reviews, want 1", len(sars))
		}
		spec := sars[0].Spec
		want := authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Version: "*", Resource: "certificatesigningrequests", Subresource: "selfnodeclient", Verb: "create"}
		if *spec.ResourceAttributes != want || spec.User != "system:node:n1" || spec.UID != "uid-1" ||
			!slices.Equal(spec.Groups, []string{"system:nodes", "system:authenticated"}) || !slices.Equal(spec.Extra["scope"], []string{"a"}) {
			t.Errorf("access review %+v %+v", spec, *spec.ResourceAttributes)
		}
		updates := approvals(client)
		if len(updates) != 1 {
			t.Fatalf("%d approvals, want 1", len(updates))
		}
		conds := updates[0].Status.Conditions
		if len(conds) != 1 || conds[0].Type != certificatesv1.CertificateApproved || conds[0].Status != "True" || conds[0].Reason != "AutoApproved" ||
			conds[0].Message != "Auto approving self kubelet client certificate after SubjectAccessReview." {
			t.Errorf("conditions %+v", conds)
		}
	})
	t.Run("a bootstrapper allowed nodeclient", func(t *testing.T) {
		c, client := approverWith(t, []string{"nodeclient"}, request(t, "boot", "system:bootstrap:abc", kubelet, nodeSubject("n1"), nodeClientUsages))
		if _, err := c.approve(t.Context(), "boot"); err != nil {
			t.Fatal(err)
		}
		updates := approvals(client)
		if len(updates) != 1 || updates[0].Status.Conditions[0].Message != "Auto approving kubelet client certificate after SubjectAccessReview." {
			t.Fatalf("approvals %+v", updates)
		}
	})
	t.Run("a requester without the permission", func(t *testing.T) {
		c, client := approverWith(t, nil, request(t, "renew", "system:node:n1", kubelet, nodeSubject("n1"), nodeClientUsages))
		res, err := c.approve(t.Context(), "renew")
		if err != nil || !res.Requeue {
			t.Fatalf("approve = %+v, %v; want a quiet retry", res, err)
		}
		if n := len(reviews(client)); n != 2 {
			t.Errorf("%d access reviews, want selfnodeclient and nodeclient", n)
		}
		if n := len(approvals(client)); n != 0 {
			t.Errorf("%d approvals, want none", n)
		}
	})
	t.Run("not a node client request", func(t *testing.T) {
		c, client := approverWith(t, []string{"selfnodeclient", "nodeclient"},
			request(t, "user", "alice", certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "alice"}, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}))
		if res, err := c.approve(t.Context(), "user"); err != nil || res != (worker.Result{}) {
			t.Fatalf("approve = %+v, %v", res, err)
		}
		if len(client.Actions()) != 0 {
			t.Errorf("actions %v, want none", client.Actions())
		}
	})
	t.Run("already decided", func(t *testing.T) {
		denied := request(t, "denied", "system:node:n1", kubelet, nodeSubject("n1"), nodeClientUsages)
		denied.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: "True"}}
		c, client := approverWith(t, []string{"selfnodeclient"}, denied)
		if _, err := c.approve(t.Context(), "denied"); err != nil {
			t.Fatal(err)
		}
		if len(client.Actions()) != 0 {
			t.Errorf("actions %v, want none", client.Actions())
		}
	})
}

func TestSignLeavesOthersAlone(t *testing.T) {
	approved := []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True"}}
	var csrs []*certificatesv1.CertificateSigningRequest
	for _, signer := range []string{"kubernetes.io/legacy-unknown", "example.com/foo"} {
		csr := request(t, signer[:7], "alice", signer, pkix.Name{CommonName: "alice"}, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth})
		csr.Status.Conditions = approved
		csrs = append(csrs, csr)
	}
	notApproved := request(t, "pending", "system:node:n1", certificatesv1.KubeAPIServerClientKubeletSignerName, nodeSubject("n1"), nodeClientUsages)
	failed := request(t, "failed", "system:node:n1", certificatesv1.KubeAPIServerClientKubeletSignerName, nodeSubject("n1"), nodeClientUsages)
	failed.Status.Conditions = append(approved, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: "True"})
	c, client := approverWith(t, nil, append(csrs, notApproved, failed)...)
	for _, name := range []string{"kuberne", "example", "pending", "failed"} {
		if res, err := c.sign(t.Context(), name); err != nil || res != (worker.Result{}) {
			t.Errorf("sign %s = %+v, %v", name, res, err)
		}
	}
	if len(client.Actions()) != 0 {
		t.Errorf("actions %v, want none", client.Actions())
	}
}
