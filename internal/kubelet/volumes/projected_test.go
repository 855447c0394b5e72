package volumes

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// tokenServer answers TokenRequests of the fake client with token-<n>,
// valid for the requested seconds from clock's now, or fails with err.
type tokenServer struct {
	now      func() time.Time
	requests []*authenticationv1.TokenRequest
	names    []string
	err      error
}

func (s *tokenServer) install(c *fake.Clientset) {
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "token" {
			return false, nil, nil
		}
		if s.err != nil {
			return true, nil, s.err
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		s.requests = append(s.requests, tr.DeepCopy())
		if ci, ok := a.(k8stesting.CreateActionImpl); ok {
			s.names = append(s.names, ci.Name)
		}
		exp := int64(3600)
		if tr.Spec.ExpirationSeconds != nil {
			exp = *tr.Spec.ExpirationSeconds
		}
		tr.Spec.ExpirationSeconds = &exp
		tr.Status.Token = fmt.Sprintf("token-%d", len(s.requests))
		tr.Status.ExpirationTimestamp = metav1.NewTime(s.now().Add(time.Duration(exp) * time.Second))
		return true, tr, nil
	})
}

func projectedPod() *corev1.Pod {
	return testPod(vol("kube-api-access", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](3600), Audience: "api"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "ca.crt"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr(true)}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}}))
}

func TestProjectedVolume(t *testing.T) {
	requireRoot(t)
	m, client, clk := newManager(t, testConfigMap())
	ts := &tokenServer{now: clk.Now}
	ts.install(client)
	pod := projectedPod()
	vols := mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginProjected, "kube-api-access")
	if vols["kube-api-access"].HostPath != dir || !vols["kube-api-access"].ReadOnly || !mounted(t, dir) {
		t.Fatalf("volume = %+v (mounted %v)", vols["kube-api-access"], mounted(t, dir))
	}
	for file, want := range map[string]string{"token": "token-1", "ca.crt": "alpha", "namespace": "default"} {
		if got := readFile(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if mode := fileMode(t, filepath.Join(dir, "token")); mode.Perm() != 0o644 {
		t.Errorf("token mode = %v, want defaultMode 0644 without fsGroup", mode)
	}
	if len(ts.requests) != 1 {
		t.Fatalf("%d token requests", len(ts.requests))
	}
	req := ts.requests[0]
	want := authenticationv1.TokenRequestSpec{
		Audiences:         []string{"api"},
		ExpirationSeconds: ptr[int64](3600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "uid-1"},
	}
	if fmt.Sprint(req.Spec.Audiences) != fmt.Sprint(want.Audiences) || *req.Spec.ExpirationSeconds != 3600 || *req.Spec.BoundObjectRef != *want.BoundObjectRef || ts.names[0] != "default" {
		t.Errorf("token request for %s = %+v, want for default %+v", ts.names[0], req.Spec, want)
	}

	// Cached until 80% of its lifetime has passed.
	clk.Step(47 * time.Minute)
	mustSetup(t, m, pod)
	if len(ts.requests) != 1 {
		t.Fatalf("token requested again after 47 of 60 minutes")
	}
	clk.Step(2 * time.Minute)
	mustSetup(t, m, pod)
	if len(ts.requests) != 2 || readFile(t, filepath.Join(dir, "token")) != "token-2" {
		t.Fatalf("token not refreshed after 49 of 60 minutes: %d requests", len(ts.requests))
	}

	// A failed refresh keeps the valid cached token; once it expired, the
	// volume fails.
	ts.err = errors.New("apiserver down")
	clk.Step(50 * time.Minute)
	mustSetup(t, m, pod)
	if got := readFile(t, filepath.Join(dir, "token")); got != "token-2" {
		t.Errorf("token = %q after a failed refresh", got)
	}
	clk.Step(11 * time.Minute)
	err := setupError(t, m, pod)
	if want := `MountVolume.SetUp failed for volume "kube-api-access" : token of service account "default" expired and refresh failed: apiserver down`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestTokenRefreshAfterADay(t *testing.T) {
	now := testNow
	tr := &authenticationv1.TokenRequest{
		Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](7 * 24 * 3600)},
		Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(now.Add(7 * 24 * time.Hour))},
	}
	if tokenNeedsRefresh(tr, now.Add(23*time.Hour)) {
		t.Error("a week-long token refreshed after 23 hours")
	}
	if !tokenNeedsRefresh(tr, now.Add(25*time.Hour)) {
		t.Error("a week-long token not refreshed after 25 hours")
	}
}

func TestProjectedFSGroupAndErrors(t *testing.T) {
	requireRoot(t)
	m, client, clk := newManager(t, testConfigMap())
	ts := &tokenServer{now: clk.Now}
	ts.install(client)
	pod := projectedPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](2345)}
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginProjected, "kube-api-access")
	token := filepath.Join(dir, "..data", "token")
	if mode := fileMode(t, token); mode.Perm() != 0o640 {
		t.Errorf("token mode = %v, want 0600 plus group read for fsGroup", mode)
	}
	if st := fileMode(t, filepath.Join(dir, "..data")); st&0o040 == 0 {
		t.Errorf("data dir mode = %v, want group readable", st)
	}

	// Failing sources are reported together; the volume is not written.
	pod2 := projectedPod()
	pod2.UID = "uid-2"
	pod2.Spec.Volumes[0].Projected.Sources = append(pod2.Spec.Volumes[0].Projected.Sources,
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr("b"), Path: "b"}},
		corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "x/y", KeyType: "ED25519", CredentialBundlePath: "c"}},
		corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}},
	)
	err := setupError(t, m, pod2)
	want := `MountVolume.SetUp failed for volume "kube-api-access" : [while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "b" not found, while fetching service account: serviceaccounts "default" not found, secrets "gone" not found]`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if isDir(m.VolumeDir(pod2.UID, PluginProjected, "kube-api-access")) {
		t.Error("failed projected volume has a directory")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(token, &st); err != nil || st.Gid != 2345 {
		t.Errorf("token gid = %d (%v), want 2345", st.Gid, err)
	}
}
