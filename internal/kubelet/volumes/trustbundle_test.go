package volumes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testCert is a self-signed certificate in PEM.
func testCert(t *testing.T, serial int64) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func bundle(name, signer string, labels map[string]string, pems ...string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "")}}
}

// certsIn counts the PEM certificates of a file and checks there is
// nothing else in it.
func certsIn(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	rest := []byte(data)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		out = append(out, string(pem.EncodeToMemory(b)))
	}
	if strings.TrimSpace(string(rest)) != "" {
		t.Errorf("not only certificates: %q left", rest)
	}
	return out
}

func TestClusterTrustBundleProjection(t *testing.T) {
	requireRoot(t)
	a, b, c, d := testCert(t, 1), testCert(t, 2), testCert(t, 3), testCert(t, 4)
	objs := []runtime.Object{
		bundle("plain", "", nil, a),
		bundle("example.com:s:one", "example.com/s", map[string]string{"team": "x"}, a, b),
		bundle("example.com:s:two", "example.com/s", map[string]string{"team": "x"}, b, c),
		bundle("example.com:s:three", "example.com/s", map[string]string{"team": "y"}, d),
	}
	m, client, _ := newManager(t)
	for _, o := range objs {
		client.Tracker().Add(o)
	}
	signer := "example.com/s"
	src := func(p corev1.ClusterTrustBundleProjection) corev1.VolumeProjection {
		return corev1.VolumeProjection{ClusterTrustBundle: &p}
	}
	pod := testPod(vol("ctb", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		src(corev1.ClusterTrustBundleProjection{Name: ptr("plain"), Path: "by-name.pem"}),
		src(corev1.ClusterTrustBundleProjection{SignerName: &signer, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, Path: "team-x.pem"}),
		src(corev1.ClusterTrustBundleProjection{SignerName: &signer, LabelSelector: &metav1.LabelSelector{}, Path: "all.pem"}),
		src(corev1.ClusterTrustBundleProjection{SignerName: &signer, Optional: ptr(true), Path: "nil-selector.pem"}),
		src(corev1.ClusterTrustBundleProjection{Name: ptr("missing"), Optional: ptr(true), Path: "missing.pem"}),
	}}}))
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginProjected, "ctb")
	for file, want := range map[string]int{"by-name.pem": 1, "team-x.pem": 3, "all.pem": 4, "nil-selector.pem": 0, "missing.pem": 0} {
		if got := certsIn(t, readFile(t, filepath.Join(dir, file))); len(got) != want {
			t.Errorf("%s holds %d certificates, want %d", file, len(got), want)
		}
	}
	first := readFile(t, filepath.Join(dir, "team-x.pem"))
	mustSetup(t, m, pod)
	if again := readFile(t, filepath.Join(dir, "team-x.pem")); again != first {
		t.Error("the order of the anchors changed between two syncs")
	}

	for name, p := range map[string]corev1.ClusterTrustBundleProjection{
		"missing bundle":   {Name: ptr("missing"), Path: "x.pem"},
		"signer, no match": {SignerName: &signer, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "z"}}, Path: "x.pem"},
		"nil selector":     {SignerName: &signer, Path: "x.pem"},
	} {
		bad := testPod(vol("ctb", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src(p)}}}))
		bad.UID = "uid-bad"
		if err := setupError(t, m, bad); err == nil {
			t.Errorf("%s: the volume was set up, want an error", name)
		}
	}
}
