package apiserver_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// csrPEM is a PEM certificate request and certPEM a self-signed PEM
// certificate, as the CSR API conformance test sends.
func csrPEM(t *testing.T) (csr, cert []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "e2e.example.com"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e.example.com"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
}

// TestCertificateSigningRequests drives a request as the CSR API
// conformance test does: the requestor is the caller, /approval changes
// the conditions and metadata only, /status the certificate and other
// conditions but keeps Approved, and the main resource keeps its spec.
func TestCertificateSigningRequests(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "")
	csrs := client.CertificatesV1().CertificateSigningRequests()
	request, certificate := csrPEM(t)
	signer := "example.com/e2e-certificates"

	resources, err := client.Discovery().ServerResourcesForGroupVersion("certificates.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
	}
	for _, want := range []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status",
		"clustertrustbundles", "podcertificaterequests", "podcertificaterequests/status"} {
		if !slices.Contains(names, want) {
			t.Errorf("discovery lacks %s: %v", want, names)
		}
	}

	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-example-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, ExpirationSeconds: ptr.To(int32(3600)),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, Username: "mallory"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Username != "test-admin" || !slices.Contains(created.Spec.Groups, "system:masters") {
		t.Errorf("requestor = %q %v, want the caller", created.Spec.Username, created.Spec.Groups)
	}

	// The main resource changes metadata, never the spec.
	toUpdate := created.DeepCopy()
	toUpdate.Annotations = map[string]string{"updated": "true"}
	toUpdate.Spec.SignerName = "example.com/other"
	updated, err := csrs.Update(ctx, toUpdate, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.SignerName != signer || updated.Annotations["updated"] != "true" {
		t.Errorf("update: signer %q, annotations %v", updated.Spec.SignerName, updated.Annotations)
	}

	patched, err := csrs.Patch(ctx, created.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedapproval":"true"}},"status":{"conditions":[{"type":"ApprovalPatch","status":"True","reason":"e2e"}]}}`),
		metav1.PatchOptions{}, "approval")
	if err != nil {
		t.Fatal(err)
	}
	if len(patched.Status.Conditions) != 1 || patched.Status.Conditions[0].Type != "ApprovalPatch" || patched.Annotations["patchedapproval"] != "true" {
		t.Errorf("patch /approval = %+v", patched)
	}
	patched.Status.Conditions = append(patched.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E"})
	approved, err := csrs.UpdateApproval(ctx, patched.Name, patched, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(approved.Status.Conditions) != 2 || approved.Status.Conditions[1].LastUpdateTime.IsZero() {
		t.Errorf("update /approval conditions = %+v", approved.Status.Conditions)
	}

	certJSON, _ := json.Marshal(certificate)
	issued, err := csrs.Patch(ctx, created.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"certificate":`+string(certJSON)+`}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(issued.Status.Certificate, certificate) || issued.Annotations["patchedstatus"] != "true" {
		t.Errorf("patch /status: annotations %v, certificate set %v", issued.Annotations, issued.Status.Certificate != nil)
	}

	// /status keeps the Approved condition as stored and may not drop it.
	changed := issued.DeepCopy()
	changed.Status.Conditions[1].Reason = "Changed"
	changed.Status.Conditions = append(changed.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "StatusUpdate", Status: corev1.ConditionTrue})
	final, err := csrs.UpdateStatus(ctx, changed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Status.Conditions) != 3 || !reflect.DeepEqual(final.Status.Conditions[1], issued.Status.Conditions[1]) {
		t.Errorf("update /status conditions = %+v", final.Status.Conditions)
	}
	dropped := final.DeepCopy()
	dropped.Status.Conditions = dropped.Status.Conditions[:1]
	_, err = csrs.UpdateStatus(ctx, dropped, metav1.UpdateOptions{})
	wantInvalid(t, err, metav1.CauseTypeForbidden, "status.conditions", `may not remove a condition of type "Approved"`)

	list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + signer})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != created.Name {
		t.Errorf("list by signer = %d items", len(list.Items))
	}
}

// TestCertificateAdmission: CertificateSubjectRestriction refuses a
// kube-apiserver-client request for system:masters; CertificateApproval
// and CertificateSigning let a user approve or issue only for the signers
// (or signer domains) it holds approve or sign on.
func TestCertificateAdmission(t *testing.T) {
	ctx := testContext(t)
	srv, admin := newClient(t, "")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	request := func(orgs ...string) []byte {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice", Organization: orgs}}, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	newCSR := func(name, signer string, req []byte) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: req, SignerName: signer, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
	}
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	_, err = csrs.Create(ctx, newCSR("masters", certificatesv1.KubeAPIServerClientSignerName, request("system:masters")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed") {
		t.Fatalf("a system:masters request: %v, want 403", err)
	}
	if _, err := csrs.Create(ctx, newCSR("masters-elsewhere", "example.com/other", request("system:masters")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("system:masters for another signer: %v", err)
	}

	// approver may update the subresources, and approve and sign for
	// example.com/* only.
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}, Verbs: []string{"approve", "sign"}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "approver"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "approver"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "approver"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approver := kubernetes.NewForConfigOrDie(srv.ConfigAs("approver")).CertificatesV1().CertificateSigningRequests()
	_, cert := csrPEM(t)
	for _, tc := range []struct {
		signer string
		ok     bool
	}{{"example.com/mine", true}, {certificatesv1.KubeAPIServerClientSignerName, false}} {
		created, err := csrs.Create(ctx, newCSR("for-"+strings.NewReplacer("/", "-", ".", "-").Replace(tc.signer), tc.signer, request()), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
		approved, err := approver.UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
		if tc.ok != (err == nil) || (err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "`+tc.signer+`"`))) {
			t.Errorf("approve for %s: %v, want allowed %v", tc.signer, err, tc.ok)
		}
		if !tc.ok {
			if approved, err = csrs.UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("cluster-admin approving: %v", err)
			}
		}
		approved.Status.Certificate = cert
		_, err = approver.UpdateStatus(ctx, approved, metav1.UpdateOptions{})
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), `user not permitted to sign requests with signerName "`+tc.signer+`"`)) {
			t.Errorf("sign for %s: %v, want allowed %v", tc.signer, err, tc.ok)
		}
	}
}
