package apiserver_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/satoken"
	"orch/internal/envtest"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

// asToken is a clientset that authenticates with a bearer token.
func asToken(srv *envtest.Server, token string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, BearerToken: token, QPS: -1, Timeout: 30 * time.Second})
}

// claimsOf decodes a token's payload without checking it.
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func tokenFor(t *testing.T, client kubernetes.Interface, ns, name string, spec authenticationv1.TokenRequestSpec) (*authenticationv1.TokenRequest, error) {
	t.Helper()
	return client.CoreV1().ServiceAccounts(ns).CreateToken(testContext(t), name, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
}

// TestServiceAccountTokens: TokenRequest gives tokens the apiserver accepts
// as bearer tokens until what they are bound to goes away; tokens for other
// audiences, expired tokens and garbage get 401.
func TestServiceAccountTokens(t *testing.T) {
	srv, client := newClientWith(t, "team", envtest.Options{RBAC: true})
	ctx := testContext(t)
	sa, err := client.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// An unbound token with the defaults.
	before := time.Now().Truncate(time.Second)
	tr, err := tokenFor(t, client, "team", "builder", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name != "builder" || tr.Namespace != "team" || tr.UID != sa.UID || ptr.Deref(tr.Spec.ExpirationSeconds, 0) != 3600 ||
		!slices.Equal(tr.Spec.Audiences, []string{issuer}) || tr.Status.Token == "" {
		t.Fatalf("token request = %+v", tr)
	}
	if exp := tr.Status.ExpirationTimestamp.Time; exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("expirationTimestamp = %v, want an hour from now", exp)
	}
	c := claimsOf(t, tr.Status.Token)
	if c["iss"] != issuer || c["sub"] != "system:serviceaccount:team:builder" {
		t.Errorf("claims = %v", c)
	}
	// Authenticated (not 401), though nothing grants it the namespace.
	if _, err := asToken(srv, tr.Status.Token).CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("GET with the token: err = %v, want Forbidden", err)
	}
	who, err := asToken(srv, tr.Status.Token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := who.Status.UserInfo; u.Username != "system:serviceaccount:team:builder" || u.UID != string(sa.UID) ||
		!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}) ||
		len(u.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
		t.Errorf("whoami = %+v", u)
	}

	// A pod-bound token as the kubelet asks for it: extended to a year,
	// with warnafter at the requested expiry.
	bound, err := tokenFor(t, client, "team", "builder", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: pod.UID}})
	if err != nil {
		t.Fatal(err)
	}
	bc := claimsOf(t, bound.Status.Token)
	k8s := bc["kubernetes.io"].(map[string]any)
	if p := k8s["pod"].(map[string]any); p["name"] != "web" || p["uid"] != string(pod.UID) {
		t.Errorf("pod claim = %v", p)
	}
	if exp, iat := bc["exp"].(float64), bc["iat"].(float64); exp-iat != satoken.ExpirationExtensionSeconds || k8s["warnafter"].(float64)-iat != 3607 {
		t.Errorf("exp-iat = %v, warnafter = %v", exp-iat, k8s["warnafter"])
	}
	if got := bound.Status.ExpirationTimestamp.Sub(bound.CreationTimestamp.Time); got != 3607*time.Second {
		t.Errorf("status says the token lasts %v, want 3607s", got)
	}
	review, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bound.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := review.Status; !st.Authenticated || st.Error != "" || st.User.Username != "system:serviceaccount:team:builder" ||
		!slices.Equal(st.Audiences, []string{issuer}) || !slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-name"], []string{"web"}) ||
		!slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-uid"], []string{string(pod.UID)}) {
		t.Errorf("review = %+v", st)
	}
	boundClient := asToken(srv, bound.Status.Token)
	if _, err := boundClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("whoami with the pod-bound token: %v", err)
	}
	if err := client.CoreV1().Pods("team").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := boundClient.CoreV1().Pods("team").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("after the pod is deleted: err = %v, want 401", err)
	}
	review, err = client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bound.Status.Token}}, metav1.CreateOptions{})
	if err != nil || review.Status.Authenticated || review.Status.Error != "service account token has been invalidated" {
		t.Errorf("review after pod deletion = %+v, %v", review.Status, err)
	}

	// A token for another audience is not for the apiserver, but a review
	// for that audience accepts it.
	vault, err := tokenFor(t, client, "team", "builder", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asToken(srv, vault.Status.Token).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("other audience: err = %v, want 401", err)
	}
	review, err = client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: vault.Status.Token, Audiences: []string{"vault", "other"}}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || !slices.Equal(review.Status.Audiences, []string{"vault"}) {
		t.Errorf("review for vault = %+v, %v", review.Status, err)
	}
	review, err = client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: vault.Status.Token}}, metav1.CreateOptions{})
	if err != nil || review.Status.Authenticated || !strings.Contains(review.Status.Error, "token audiences") {
		t.Errorf("review for the apiserver = %+v, %v", review.Status, err)
	}

	// An expired token, signed with the server's key.
	signer, err := satoken.NewSigner(issuer, srv.ServiceAccountKey)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := satoken.NewClaims(sa, satoken.Binding{}, time.Now().Add(-2*time.Hour), 600, 0, []string{issuer})
	expired, err := signer.Sign(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asToken(srv, expired).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("expired: err = %v, want 401", err)
	}
	review, err = client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: expired}}, metav1.CreateOptions{})
	if err != nil || review.Status.Authenticated || review.Status.Error != "service account token has expired" {
		t.Errorf("review of an expired token = %+v, %v", review.Status, err)
	}

	// Garbage.
	if _, err := asToken(srv, "not-a-token").CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("garbage: err = %v, want 401", err)
	}
	review, err = client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{})
	if err != nil || review.Status.Authenticated || review.Status.Error != "invalid bearer token" {
		t.Errorf("review of garbage = %+v, %v", review.Status, err)
	}
	if _, err := client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("review without a token: err = %v, want 400", err)
	}

	// Deleting the service account ends its tokens.
	if err := client.CoreV1().ServiceAccounts("team").Delete(ctx, "builder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := asToken(srv, tr.Status.Token).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("service account deleted: err = %v, want 401", err)
	}
}

// TestTokenRequestErrors: the status codes and messages of upstream's
// TokenREST for bad requests.
func TestTokenRequestErrors(t *testing.T) {
	_, client := newClient(t, "team")
	ctx := testContext(t)
	for _, name := range []string{"builder", "other"} {
		if _, err := client.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{ServiceAccountName: "other", NodeName: "gone-node", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podRef := func(name string, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: name, UID: k8stypes.UID(uid)}
	}
	cases := []struct {
		name, account string
		spec          authenticationv1.TokenRequestSpec
		check         func(error) bool
		message       string
	}{
		{"too short", "builder", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}, apierrors.IsInvalid, "may not specify a duration less than 10 minutes"},
		{"no such account", "nobody", authenticationv1.TokenRequestSpec{}, apierrors.IsNotFound, `serviceaccounts "nobody" not found`},
		{"no such pod", "builder", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("nope", "")}, apierrors.IsNotFound, `pods "nope" not found`},
		{"pod of another account", "builder", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("web", "")}, apierrors.IsBadRequest, `cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.`},
		{"pod recreated", "other", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("web", "old-uid")}, apierrors.IsConflict, "does not match the UID in record"},
		{"config map", "builder", authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}, apierrors.IsBadRequest, "cannot bind token to object of type /v1, Kind=ConfigMap"},
	}
	for _, tc := range cases {
		_, err := tokenFor(t, client, "team", tc.account, tc.spec)
		if !tc.check(err) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.message)
		}
	}
	// A pod on a node that does not exist still names the node.
	tr, err := tokenFor(t, client, "team", "other", authenticationv1.TokenRequestSpec{BoundObjectRef: podRef("web", string(pod.UID))})
	if err != nil {
		t.Fatal(err)
	}
	if node := claimsOf(t, tr.Status.Token)["kubernetes.io"].(map[string]any)["node"].(map[string]any); node["name"] != "gone-node" || node["uid"] != nil {
		t.Errorf("node claim = %v", node)
	}
}

// TestAuthenticationDiscovery: the review resources and serviceaccounts/token
// are in discovery, create only.
func TestAuthenticationDiscovery(t *testing.T) {
	_, client := newClient(t, "")
	list, err := client.Discovery().ServerResourcesForGroupVersion("authentication.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
		if r.Namespaced || !slices.Equal(r.Verbs, []string{"create"}) {
			t.Errorf("%s: namespaced %v verbs %v", r.Name, r.Namespaced, r.Verbs)
		}
	}
	if !slices.Equal(names, []string{"selfsubjectreviews", "tokenreviews"}) {
		t.Errorf("authentication.k8s.io/v1 = %v", names)
	}
	core, err := client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range core.APIResources {
		if r.Name == "serviceaccounts/token" {
			found = r.Kind == "TokenRequest" && r.Group == "authentication.k8s.io" && slices.Equal(r.Verbs, []string{"create"})
		}
	}
	if !found {
		t.Error("serviceaccounts/token is missing from /api/v1 or wrong")
	}
	_, all, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.GroupVersion == "authentication.k8s.io/v1" && len(l.APIResources) != 2 {
			t.Errorf("aggregated authentication.k8s.io/v1 = %v", l.APIResources)
		}
	}
	if _, err := client.AuthenticationV1().RESTClient().Get().Resource("tokenreviews").DoRaw(testContext(t)); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("GET tokenreviews: err = %v, want 405", err)
	}
}

// TestIssuerDiscovery: the OpenID configuration and the key set are served
// to authenticated users (a service account token will do), 401 otherwise.
func TestIssuerDiscovery(t *testing.T) {
	// The bootstrap policy lets service accounts read the issuer documents
	// (system:service-account-issuer-discovery).
	srv, client := newClientWith(t, "team", envtest.Options{RBAC: true})
	ctx := testContext(t)
	if _, err := client.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := tokenFor(t, client, "team", "default", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(filters.Authenticate(srv.API, nil, nil, srv.API))
	t.Cleanup(front.Close)
	get := func(path, token string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	for _, path := range []string{satoken.OpenIDConfigPath, satoken.JWKSPath} {
		if resp, _ := get(path, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous %s: %d, want 401", path, resp.StatusCode)
		}
	}
	resp, body := get(satoken.OpenIDConfigPath, tr.Status.Token)
	var config struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &config); err != nil || resp.StatusCode != 200 || config.Issuer != issuer ||
		config.JWKSURI != "https://127.0.0.1:6443/openid/v1/jwks" || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("config: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = get(satoken.JWKSPath, tr.Status.Token)
	var set struct {
		Keys []struct{ Kid, Alg, Kty string } `json:"keys"`
	}
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	if err := json.Unmarshal(body, &set); err != nil || resp.StatusCode != 200 || len(set.Keys) != 1 || set.Keys[0].Alg != "RS256" ||
		!strings.Contains(string(header), `"kid":"`+set.Keys[0].Kid+`"`) || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Errorf("jwks: %d %s %v (token header %s)", resp.StatusCode, body, resp.Header, header)
	}
}

// TestServiceAccountAdmission: pods get the default service account and
// the kube-api-access volume as upstream's admission adds them.
func TestServiceAccountAdmission(t *testing.T) {
	srv := envtest.StartWith(t, envtest.Options{ServiceAccountAdmission: true})
	client := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := testContext(t)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No service account controller runs here: a missing default account
	// is looked up for a second or two, then refused.
	_, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "early"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "early" is forbidden: error looking up service account team/default: serviceaccount "default" not found`) {
		t.Errorf("without a default account: err = %v", err)
	}
	for _, sa := range []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false)},
	} {
		if _, err := client.CoreV1().ServiceAccounts("team").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	pod, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
			Containers: []corev1.Container{{Name: "a", Image: "i"}, {Name: "own", Image: "i",
				VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Volumes: []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" || pod.Spec.DeprecatedServiceAccount != "default" ||
		len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("service account %q/%q, pull secrets %v", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, pod.Spec.ImagePullSecrets)
	}
	if len(pod.Spec.Volumes) != 2 {
		t.Fatalf("volumes = %+v", pod.Spec.Volumes)
	}
	vol := pod.Spec.Volumes[1]
	if !strings.HasPrefix(vol.Name, "kube-api-access-") || len(vol.Name) != len("kube-api-access-")+5 || vol.Projected == nil {
		t.Fatalf("token volume = %+v", vol)
	}
	want := &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
	if got, _ := json.Marshal(vol.Projected); string(got) != mustJSON(want) {
		t.Errorf("projection = %s\nwant %s", got, mustJSON(want))
	}
	mount := corev1.VolumeMount{Name: vol.Name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	for _, c := range [][]corev1.VolumeMount{pod.Spec.InitContainers[0].VolumeMounts, pod.Spec.Containers[0].VolumeMounts} {
		if len(c) != 1 || mustJSON(c[0]) != mustJSON(mount) {
			t.Errorf("mounts = %+v, want %+v", c, mount)
		}
	}
	if m := pod.Spec.Containers[1].VolumeMounts; len(m) != 1 || m[0].Name != "mine" {
		t.Errorf("a container with its own mount there got %+v", m)
	}

	for name, spec := range map[string]corev1.PodSpec{
		"quiet-account": {ServiceAccountName: "quiet", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		"quiet-pod":     {AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	} {
		p, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.Volumes) != 0 || len(p.Spec.Containers[0].VolumeMounts) != 0 {
			t.Errorf("%s: automount off but got %+v", name, p.Spec.Volumes)
		}
	}
	// The pod asks for the automount but the account says no: the pod wins.
	p, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loud"},
		Spec: corev1.PodSpec{ServiceAccountName: "quiet", AutomountServiceAccountToken: ptr.To(true), Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil || len(p.Spec.Volumes) != 1 {
		t.Errorf("pod automount true: %v %+v", err, p)
	}

	_, err = client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lost"},
		Spec: corev1.PodSpec{ServiceAccountName: "missing", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `error looking up service account team/missing: serviceaccount "missing" not found`) {
		t.Errorf("missing account: err = %v", err)
	}

	mirror := func(name string, spec corev1.PodSpec) (*corev1.Pod, error) {
		return client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Spec: spec}, metav1.CreateOptions{})
	}
	m, err := mirror("static", corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}})
	if err != nil || m.Spec.ServiceAccountName != "" || len(m.Spec.Volumes) != 0 {
		t.Errorf("mirror pod: %v %+v", err, m)
	}
	_, err = mirror("static-sa", corev1.PodSpec{NodeName: "n1", ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "i"}}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a mirror pod may not reference service accounts") {
		t.Errorf("mirror pod with an account: err = %v", err)
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// --service-account-max-token-expiration shortens longer requests, with
// upstream's warning; with the extension off, the kubelet's 3607-second
// pod-bound tokens expire when they say.
func TestTokenExpirationLimits(t *testing.T) {
	srv, _ := newClientWith(t, "team", envtest.Options{ServiceAccountMaxTokenExpiration: 2 * time.Hour, NoExtendedTokenExpiration: true})
	client, warned := warnedClient(t, srv)
	ctx := testContext(t)
	if _, err := client.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tokenFor(t, client, "team", "sa", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(48 * 3600))})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(tr.Spec.ExpirationSeconds, 0); got != 7200 {
		t.Errorf("expirationSeconds %d, want the cap 7200", got)
	}
	if w := warned.take(); !strings.Contains(w, "requested expiration of 172800 seconds shortened to 7200 seconds") {
		t.Errorf("warnings %q", w)
	}
	bound, err := tokenFor(t, client, "team", "sa", authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3607)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}})
	if err != nil {
		t.Fatal(err)
	}
	c := claimsOf(t, bound.Status.Token)
	if exp, iat := c["exp"].(float64), c["iat"].(float64); exp-iat != 3607 {
		t.Errorf("a pod-bound 3607 s token lives %v s, want 3607 without the extension", exp-iat)
	}
}
