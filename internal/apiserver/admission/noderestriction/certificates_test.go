package noderestriction

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/authz"
)

func certVolume(signer string) corev1.Volume {
	return corev1.Volume{Name: "cert", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{PodCertificate: &corev1.PodCertificateProjection{SignerName: signer, KeyType: "ED25519", CredentialBundlePath: "b"}}}}}}
}

// signerAuthorizer lets mynode ask for signer example.com/granted.
type signerAuthorizer struct{ asked *authz.Attributes }

func (a signerAuthorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	*a.asked = attrs
	if attrs.Verb == PodCertificateSignerVerb && attrs.Resource == "example.com:granted" {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

func TestPodCertificateRequests(t *testing.T) {
	s := fixtureStore()
	for _, p := range []*corev1.Pod{withVolumes(testPod("certpod", "mynode"), certVolume("example.com/spiffe")),
		withVolumes(testPod("othercert", "othernode"), certVolume("example.com/spiffe")),
		withVolumes(mirrorPod("mirrorcert", "mynode"), certVolume("example.com/spiffe"))} {
		p.Spec.ServiceAccountName = "sa"
		s.pods[p.Namespace+"/"+p.Name] = p
	}
	asked := &authz.Attributes{}
	l := s.lookup()
	l.Authorizer = signerAuthorizer{asked: asked}
	l.ServiceAccount = func(ns, name string) (*corev1.ServiceAccount, error) {
		if ns == "ns" && name == "sa" {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "sa-uid"}}, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
	}
	pcr := func(pod string, change func(*certificatesv1.PodCertificateRequestSpec)) Request {
		spec := certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/spiffe", PodName: pod, PodUID: types.UID(pod + "-uid"),
			ServiceAccountName: "sa", ServiceAccountUID: "sa-uid", NodeName: "mynode", NodeUID: "mynode-uid"}
		if change != nil {
			change(&spec)
		}
		return Request{User: mynode, Operation: Create, APIGroup: "certificates.k8s.io", Resource: "podcertificaterequests", Namespace: "ns",
			Object: &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "req-"}, Spec: spec}}
	}
	const forbiddenPrefix = `podcertificaterequests.certificates.k8s.io "req-" is forbidden: `
	cases := []admitCase{
		{"for a pod on the node that mounts the signer", pcr("certpod", nil), want{}},
		{"naming another node", pcr("certpod", func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "othernode" }),
			want{msg: forbiddenPrefix + `PodCertificateRequest.Spec.NodeName="othernode", which is not the requesting node "mynode"`}},
		{"for another node's pod", pcr("othercert", nil), want{msg: forbiddenPrefix + `pod "ns/othercert" is not running on node "mynode" named in the PodCertificateRequest`}},
		{"for a mirror pod", pcr("mirrorcert", nil), want{msg: forbiddenPrefix + `pod "ns/mirrorcert" is a mirror pod`}},
		{"for a missing pod", pcr("nopod", nil), want{part: `while retrieving pod "ns/nopod" named in the PodCertificateRequest`}},
		{"naming another service account", pcr("certpod", func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "other" }),
			want{msg: forbiddenPrefix + `PodCertificateRequest for pod "ns/certpod" contains serviceAccountName ("other") that differs from running pod ("sa")`}},
		{"for a signer the pod does not mount", pcr("certpod", func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/other" }),
			want{msg: forbiddenPrefix + `pod "ns/certpod" does not mount a podCertificate projected volume for signer "example.com/other"`}},
		{"for a signer the node may ask for anyway", pcr("certpod", func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/granted" }), want{}},
		{"a status update", Request{User: mynode, Operation: Update, APIGroup: "certificates.k8s.io", Resource: "podcertificaterequests",
			Subresource: "status", Namespace: "ns", Name: "r", Object: &certificatesv1.PodCertificateRequest{}}, want{part: "unexpected operation UPDATE"}},
		{"by someone else", func() Request { r := pcr("othercert", nil); r.User = bob; return r }(), want{}},
	}
	run(t, cases, l)
	if asked.Verb != PodCertificateSignerVerb || asked.Resource != "example.com:granted" || asked.Name != "sa" || asked.APIGroup != "certificates.k8s.io" {
		t.Errorf("the authorizer was asked %+v", *asked)
	}
	// UIDs that differ may be lag: a Conflict, not a Forbidden.
	for name, change := range map[string]func(*certificatesv1.PodCertificateRequestSpec){
		"node UID": func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" },
		"pod UID":  func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old" },
		"SA UID":   func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" },
	} {
		err := Admit(context.Background(), pcr("certpod", change), l)
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"old"`) {
			t.Errorf("%s that differs: %v, want a Conflict naming it", name, err)
		}
	}
}

func csrPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCSRsAndResourceSlices(t *testing.T) {
	csr := func(signer string, request []byte) Request {
		return Request{User: mynode, Operation: Create, APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Name: "csr",
			Object: &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: request}}}
	}
	slice := func(op, node string) Request {
		s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
		if node != "" {
			s.Spec.NodeName = ptr.To(node)
		}
		r := Request{User: mynode, Operation: op, APIGroup: "resource.k8s.io", Resource: "resourceslices", Name: "s", Object: s}
		if op == Delete {
			r.Object, r.OldObject = nil, s
		}
		return r
	}
	run(t, []admitCase{
		{"a serving CSR of its own", csr(certificatesv1.KubeletServingSignerName, csrPEM(t, "system:node:mynode")), want{}},
		{"a client CSR of its own", csr(certificatesv1.KubeAPIServerClientKubeletSignerName, csrPEM(t, "system:node:mynode")), want{}},
		{"a serving CSR of another node", csr(certificatesv1.KubeletServingSignerName, csrPEM(t, "system:node:othernode")),
			want{msg: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: can only create a node CSR with CN=system:node:mynode`}},
		{"a CSR for another signer", csr("example.com/any", csrPEM(t, "anything")), want{}},
		{"a CSR that does not parse", csr(certificatesv1.KubeletServingSignerName, []byte("junk")), want{part: "unable to parse csr"}},
		{"its own ResourceSlice", slice(Create, "mynode"), want{}},
		{"another node's ResourceSlice", slice(Create, "othernode"),
			want{msg: `resourceslices.resource.k8s.io "s" is forbidden: can only create ResourceSlice with the same NodeName as the requesting node`}},
		{"a ResourceSlice of no node", slice(Create, ""), want{part: "can only create ResourceSlice"}},
		{"deleting its own ResourceSlice", slice(Delete, "mynode"), want{}},
		{"deleting another node's ResourceSlice", slice(Delete, "othernode"), want{part: "can only delete ResourceSlice"}},
	}, Lookup{})
}
