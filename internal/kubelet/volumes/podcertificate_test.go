package volumes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"orch/internal/envtest"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func certPod() *corev1.Pod {
	pod := testPod(vol("creds", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr[int32](0o644),
		Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{
			SignerName: "example.com/spiffe", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr[int32](3600),
			CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem",
			UserAnnotations: map[string]string{"spiffe/path": "/custom"},
		}}},
	}}))
	pod.Spec.NodeName = "n1"
	return pod
}

func certObjects() []runtime.Object {
	return []runtime.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default", UID: "sa-uid"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
	}
}

// nameRequests gives created PodCertificateRequests the names
// generateName asks for, as the apiserver does (the fake does not).
func nameRequests(client *fake.Clientset) {
	n := 0
	client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pcr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		if pcr.Name == "" {
			n++
			pcr.Name = fmt.Sprintf("%s%d", pcr.GenerateName, n)
		}
		return false, nil, nil
	})
}

func requests(t *testing.T, client kubernetes.Interface) []certificatesv1.PodCertificateRequest {
	t.Helper()
	list, err := client.CertificatesV1().PodCertificateRequests("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// testSigner issues certificates for PodCertificateRequests, as a signer
// controller does, from a CA of its own.
type testSigner struct {
	key *ecdsa.PrivateKey
	ca  *x509.Certificate
}

func newTestSigner(t *testing.T) *testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: testNow.AddDate(-1, 0, 0), NotAfter: testNow.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{key: key, ca: ca}
}

// issue signs the stub request's key for the request's lifetime (with a
// text line between the blocks, which the kubelet drops) and writes the
// status: Issued, refreshed half-way.
func (s *testSigner) issue(t *testing.T, client kubernetes.Interface, pcr certificatesv1.PodCertificateRequest, now time.Time) {
	t.Helper()
	now = now.Truncate(time.Second) // as certificates and the API keep times
	csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request)
	if err != nil {
		t.Fatal(err)
	}
	life := time.Duration(*pcr.Spec.MaxExpirationSeconds) * time.Second
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), NotBefore: now, NotAfter: now.Add(life)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, csr.PublicKey, s.key)
	if err != nil {
		t.Fatal(err)
	}
	chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + "intermediate:\n" +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ca.Raw}))
	pcr.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Reason", LastTransitionTime: metav1.NewTime(now)}},
		CertificateChain: chain, NotBefore: ptr(metav1.NewTime(now)), NotAfter: ptr(metav1.NewTime(now.Add(life))),
		BeginRefreshAt: ptr(metav1.NewTime(now.Add(life / 2))),
	}
	if _, err := client.CertificatesV1().PodCertificateRequests(pcr.Namespace).UpdateStatus(context.Background(), &pcr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// bundleKey checks that the credential bundle is the key file followed
// by the chain file, without the text between the chain's blocks, and
// that the chain's leaf certifies the key; it returns the key's PEM.
func bundleKey(t *testing.T, dir string) string {
	t.Helper()
	key, chain, bundle := readFile(t, filepath.Join(dir, "key.pem")), readFile(t, filepath.Join(dir, "chain.pem")), readFile(t, filepath.Join(dir, "bundle.pem"))
	if bundle != key+chain || strings.Contains(chain, "intermediate:") || strings.Count(chain, "BEGIN CERTIFICATE") != 2 {
		t.Fatalf("bundle %q is not key %q then the cleaned chain %q", bundle, key, chain)
	}
	block, _ := pem.Decode([]byte(key))
	priv, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key.pem: %s block, %v", block.Type, err)
	}
	leafBlock, _ := pem.Decode([]byte(chain))
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.(*ecdsa.PrivateKey).PublicKey.Equal(leaf.PublicKey) {
		t.Fatal("the chain's leaf does not certify the key")
	}
	return key
}

// A podCertificate projection: the pod waits for its request, gets the
// issued credentials, keeps them while a refresh is pending and takes
// the new key and chain once issued.
func TestPodCertificateProjection(t *testing.T) {
	requireRoot(t)
	m, client, clk := newManager(t, certObjects()...)
	nameRequests(client)
	signer := newTestSigner(t)
	pod := certPod()

	err := setupError(t, m, pod)
	if want := `MountVolume.SetUp failed for volume "creds" : credential bundle is not issued yet`; err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
	reqs := requests(t, client)
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	pcr := reqs[0]
	want := certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/spiffe", PodName: "p", PodUID: "uid-1",
		ServiceAccountName: "default", ServiceAccountUID: "sa-uid", NodeName: "n1", NodeUID: "node-uid",
		MaxExpirationSeconds: ptr[int32](3600), UnverifiedUserAnnotations: map[string]string{"spiffe/path": "/custom"}}
	got := pcr.Spec
	got.StubPKCS10Request = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request spec\n%+v, want\n%+v", got, want)
	}
	if csr, err := x509.ParseCertificateRequest(pcr.Spec.StubPKCS10Request); err != nil || csr.CheckSignature() != nil {
		t.Errorf("stub PKCS#10 request: %v", err)
	}
	if refs := pcr.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].UID != "uid-1" {
		t.Errorf("owner references %+v, want the pod", refs)
	}
	// Still pending: no second request.
	setupError(t, m, pod)
	if n := len(requests(t, client)); n != 1 {
		t.Fatalf("%d requests while the first is pending", n)
	}

	signer.issue(t, client, pcr, clk.Now())
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginProjected, "creds")
	first := bundleKey(t, dir)
	if mode := fileMode(t, filepath.Join(dir, "..data", "key.pem")); mode.Perm() != 0o644 {
		t.Errorf("key mode %v, want the volume's defaultMode", mode)
	}

	// Half-way through its hour the certificate is refreshed: a new
	// request, the old credentials until it is issued.
	clk.Step(31 * time.Minute)
	mustSetup(t, m, pod)
	reqs = requests(t, client)
	if len(reqs) != 2 {
		t.Fatalf("%d requests after beginRefreshAt, want 2", len(reqs))
	}
	if bundleKey(t, dir) != first {
		t.Fatal("credentials replaced before the refresh was issued")
	}
	mustSetup(t, m, pod)
	if len(requests(t, client)) != 2 {
		t.Fatal("a third request while the refresh is pending")
	}
	for _, r := range reqs {
		if r.Name != pcr.Name {
			signer.issue(t, client, r, clk.Now())
		}
	}
	mustSetup(t, m, pod)
	if bundleKey(t, dir) == first {
		t.Fatal("the refreshed key is not in use")
	}
}

// A denied request ends the projection: the pod does not start and no
// new request is made.
func TestPodCertificateDenied(t *testing.T) {
	requireRoot(t)
	m, client, _ := newManager(t, certObjects()...)
	nameRequests(client)
	pod := certPod()
	setupError(t, m, pod)
	pcr := requests(t, client)[0]
	pcr.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue,
		Reason: "NotAllowed", Message: "not this pod", LastTransitionTime: metav1.NewTime(testNow)}}
	if _, err := client.CertificatesV1().PodCertificateRequests("default").UpdateStatus(context.Background(), &pcr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err := setupError(t, m, pod)
		if want := `MountVolume.SetUp failed for volume "creds" : PodCertificateRequest was permanently denied: reason="NotAllowed" message="not this pod"`; err.Error() != want {
			t.Fatalf("error = %q, want %q", err, want)
		}
	}
	if n := len(requests(t, client)); n != 1 {
		t.Errorf("%d requests after a denial, want 1", n)
	}
}

// The same against the real apiserver on real etcd: the request passes
// its validation, the signer's status too, and the pod's volume holds
// the issued credentials.
func TestPodCertificateWithAPIServer(t *testing.T) {
	requireRoot(t)
	env := envtest.New(t, "certs")
	ctx := t.Context()
	client := env.Client
	if _, err := client.CoreV1().ServiceAccounts("certs").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := certPod()
	pod.Namespace, pod.UID = "certs", ""
	pod.Spec.Containers[0].Image = "busybox"
	pod, err := client.CoreV1().Pods("certs").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := New(t.TempDir(), client, envtest.Logger())
	t.Cleanup(func() {
		if err := unmountAll(m.Root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if _, err := m.Setup(ctx, pod); !errors.Is(err, errNotIssued) {
		t.Fatalf("Setup before the signer: %v, want %v", err, errNotIssued)
	}
	list, err := client.CertificatesV1().PodCertificateRequests("certs").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("requests: %d, %v", len(list.Items), err)
	}
	if pcr := list.Items[0]; pcr.Spec.PodUID != pod.UID || pcr.Spec.NodeName != "n1" || pcr.Spec.ServiceAccountUID == "" || pcr.Spec.NodeUID == "" {
		t.Fatalf("request spec %+v", pcr.Spec)
	}
	newTestSigner(t).issue(t, client, list.Items[0], time.Now())
	if _, err := m.Setup(ctx, pod); err != nil {
		t.Fatal(err)
	}
	bundleKey(t, m.VolumeDir(pod.UID, PluginProjected, "creds"))
}
