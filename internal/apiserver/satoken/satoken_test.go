package satoken

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

func testKey(t testing.TB) *rsa.PrivateKey {
	rsaOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return rsaKey
}

// fakeGetter holds objects by "resource/namespace/name".
type fakeGetter map[string]metav1.Object

func (g fakeGetter) Get(_ context.Context, resource, namespace, name string) (metav1.Object, error) {
	if obj, ok := g[resource+"/"+namespace+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

var (
	t0   = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sa   = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team", UID: "sa-uid"}}
	pod  = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "pod-uid"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
)

func objects() fakeGetter {
	return fakeGetter{
		"serviceaccounts/team/builder": sa.DeepCopy(),
		"pods/team/web":                pod.DeepCopy(),
		"nodes//n1":                    node.DeepCopy(),
		"secrets/team/s":               &metav1.ObjectMeta{Name: "s", Namespace: "team", UID: "secret-uid"},
	}
}

func setup(t testing.TB, key crypto.Signer, now time.Time, g Getter) (*Signer, *Authenticator) {
	t.Helper()
	signer, err := NewSigner(issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return signer, &Authenticator{Issuers: []string{issuer}, Keys: []crypto.PublicKey{key.Public()},
		Audiences: []string{issuer}, Getter: g, Now: func() time.Time { return now }}
}

func sign(t testing.TB, s *Signer, b Binding, exp, warn int64, auds []string) string {
	t.Helper()
	c, err := NewClaims(sa, b, t0, exp, warn, auds)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// payload decodes a token's claims without checking it.
func payload(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
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

// TestClaims: the token carries upstream's registered and kubernetes.io
// claims, with the kid header upstream derives.
func TestClaims(t *testing.T) {
	key := testKey(t)
	signer, _ := setup(t, key, t0, nil)
	tok := sign(t, signer, Binding{Pod: pod, Node: node}, 3607, 0, []string{issuer, "vault"})
	got := payload(t, tok)
	if got["iss"] != issuer || got["sub"] != "system:serviceaccount:team:builder" {
		t.Errorf("iss, sub = %v, %v", got["iss"], got["sub"])
	}
	if auds, _ := got["aud"].([]any); len(auds) != 2 || auds[0] != issuer || auds[1] != "vault" {
		t.Errorf("aud = %v", got["aud"])
	}
	if got["iat"] != float64(t0.Unix()) || got["nbf"] != float64(t0.Unix()) || got["exp"] != float64(t0.Unix()+3607) {
		t.Errorf("iat, nbf, exp = %v, %v, %v", got["iat"], got["nbf"], got["exp"])
	}
	if jti, _ := got["jti"].(string); len(jti) != 36 {
		t.Errorf("jti = %v, want a UUID", got["jti"])
	}
	k8s, _ := json.Marshal(got["kubernetes.io"])
	want := `{"namespace":"team","node":{"name":"n1","uid":"node-uid"},"pod":{"name":"web","uid":"pod-uid"},"serviceaccount":{"name":"builder","uid":"sa-uid"}}`
	if string(k8s) != want {
		t.Errorf("kubernetes.io = %s\nwant %s", k8s, want)
	}

	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	json.Unmarshal(header, &h)
	kid, _ := KeyID(key.Public())
	if h["alg"] != "RS256" || h["kid"] != kid || len(kid) != 43 {
		t.Errorf("header = %v, want RS256 with kid %s", h, kid)
	}

	warned, _ := NewClaims(sa, Binding{Pod: pod}, t0, ExpirationExtensionSeconds, 3607, nil)
	if warned.Kubernetes.WarnAfter == nil || !warned.Kubernetes.WarnAfter.Time.Equal(t0.Add(3607*time.Second)) {
		t.Errorf("warnafter = %v", warned.Kubernetes.WarnAfter)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "secret-uid"}}
	if _, err := NewClaims(sa, Binding{Pod: pod, Secret: secret}, t0, 600, 0, nil); err == nil {
		t.Error("a token bound to a pod and a secret was built")
	}
}

// TestAuthenticate: valid tokens give upstream's user; every reason to
// refuse one gives upstream's message.
func TestAuthenticate(t *testing.T) {
	key := testKey(t)
	signer, _ := setup(t, key, t0, nil)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherSigner, _ := NewSigner(issuer, ec)
	foreign, _ := NewSigner("https://elsewhere", key)
	podToken := sign(t, signer, Binding{Pod: pod, Node: node}, 3600, 0, nil)
	plain := sign(t, signer, Binding{}, 3600, 0, []string{issuer})

	deleted := func(at time.Time) fakeGetter {
		g := objects()
		p := pod.DeepCopy()
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
		g["pods/team/web"] = p
		return g
	}
	recreated := objects()
	recreated["serviceaccounts/team/builder"] = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team", UID: "new"}}
	noPod := objects()
	delete(noPod, "pods/team/web")

	cases := []struct {
		name      string
		token     string
		now       time.Time
		getter    fakeGetter
		requested []string
		wantErr   string
	}{
		{name: "pod bound", token: podToken, now: t0.Add(time.Minute)},
		{name: "unbound", token: plain, now: t0},
		{name: "just past exp within leeway", token: plain, now: t0.Add(3600*time.Second + 59*time.Second)},
		{name: "expired", token: plain, now: t0.Add(3600*time.Second + 61*time.Second), wantErr: "service account token has expired"},
		{name: "not yet valid", token: plain, now: t0.Add(-2 * time.Minute), wantErr: "service account token is not valid yet"},
		{name: "other audience", token: sign(t, signer, Binding{}, 3600, 0, []string{"vault"}), now: t0,
			wantErr: `token audiences ["vault"] is invalid for the target audiences ["` + issuer + `"]`},
		{name: "requested audience", token: sign(t, signer, Binding{}, 3600, 0, []string{"vault"}), now: t0, requested: []string{"vault"}},
		{name: "service account recreated", token: plain, now: t0, getter: recreated, wantErr: "service account UID (new) does not match claim (sa-uid)"},
		{name: "pod gone", token: podToken, now: t0, getter: noPod, wantErr: "service account token has been invalidated"},
		{name: "pod deleting a moment ago", token: podToken, now: t0.Add(time.Minute), getter: deleted(t0.Add(30 * time.Second))},
		{name: "pod deleted long ago", token: podToken, now: t0.Add(5 * time.Minute), getter: deleted(t0.Add(time.Minute)), wantErr: "service account token has been invalidated"},
		{name: "signed by another key", token: sign(t, otherSigner, Binding{}, 3600, 0, nil), now: t0, wantErr: "token"},
		{name: "another issuer", token: sign(t, foreign, Binding{}, 3600, 0, nil), now: t0, wantErr: "invalid bearer token"},
		{name: "not a JWT", token: "abc", now: t0, wantErr: "invalid bearer token"},
		{name: "JSON", token: `{"iss":"` + issuer + `"}`, now: t0, wantErr: "invalid bearer token"},
		{name: "alg none", token: noneToken(issuer), now: t0, wantErr: "token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.getter
			if g == nil {
				g = objects()
			}
			_, authn := setup(t, key, tc.now, g)
			user, err := authn.Authenticate(context.Background(), tc.token, tc.requested)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if user.Name != "system:serviceaccount:team:builder" || user.UID != "sa-uid" ||
				strings.Join(user.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:team" {
				t.Errorf("user = %+v", user)
			}
			if len(user.Extra[ExtraCredentialID]) != 1 || !strings.HasPrefix(user.Extra[ExtraCredentialID][0], "JTI=") {
				t.Errorf("credential-id = %v", user.Extra[ExtraCredentialID])
			}
		})
	}

	_, authn := setup(t, key, t0, objects())
	user, err := authn.Authenticate(context.Background(), podToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{ExtraPodName: "web", ExtraPodUID: "pod-uid", ExtraNodeName: "n1", ExtraNodeUID: "node-uid"} {
		if got := user.Extra[k]; len(got) != 1 || got[0] != v {
			t.Errorf("extra %s = %v, want %s", k, got, v)
		}
	}
	if strings.Join(user.Audiences, ",") != issuer {
		t.Errorf("audiences = %v", user.Audiences)
	}

	// A node-bound token needs the node; a secret-bound one the secret.
	nodeToken := sign(t, signer, Binding{Node: node}, 3600, 0, nil)
	secretToken := sign(t, signer, Binding{Secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: types.UID("secret-uid")}}}, 3600, 0, nil)
	for _, tok := range []string{nodeToken, secretToken} {
		if _, err := authn.Authenticate(context.Background(), tok, nil); err != nil {
			t.Errorf("bound token: %v", err)
		}
	}
	gone := objects()
	delete(gone, "nodes//n1")
	delete(gone, "secrets/team/s")
	_, authn = setup(t, key, t0, gone)
	for _, tok := range []string{nodeToken, secretToken} {
		if _, err := authn.Authenticate(context.Background(), tok, nil); err == nil || err.Error() != "service account token has been invalidated" {
			t.Errorf("bound object gone: err = %v", err)
		}
	}
}

// noneToken is an unsigned token (alg none) with our issuer.
func noneToken(iss string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(`{"iss":"`+iss+`","sub":"system:serviceaccount:team:builder","kubernetes.io":{"namespace":"team","serviceaccount":{"name":"builder","uid":"sa-uid"}}}`)) + "."
}

// TestDiscovery: the OpenID configuration and the JWKS describe the key as
// upstream does.
func TestDiscovery(t *testing.T) {
	key := testKey(t)
	d, err := NewDiscovery(issuer, JWKSURI("10.0.0.1:6443"), []crypto.PublicKey{key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"issuer":"` + issuer + `","jwks_uri":"https://10.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["RS256"]}`
	if string(d.Config) != want {
		t.Errorf("config = %s\nwant %s", d.Config, want)
	}
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(d.JWKS, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks = %s (%v)", d.JWKS, err)
	}
	kid, _ := KeyID(key.Public())
	k := set.Keys[0]
	if k["kty"] != "RSA" || k["alg"] != "RS256" || k["use"] != "sig" || k["kid"] != kid || k["e"] != "AQAB" || len(k["n"]) != 342 {
		t.Errorf("jwk = %v", k)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d, err = NewDiscovery(issuer, JWKSURI("h:1"), []crypto.PublicKey{ec.Public()})
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(d.JWKS, &set)
	if k := set.Keys[0]; k["kty"] != "EC" || k["crv"] != "P-256" || k["alg"] != "ES256" || len(k["x"]) != 43 || len(k["y"]) != 43 {
		t.Errorf("EC jwk = %v", k)
	}
	if _, err := NewDiscovery("http://insecure", "https://h/jwks", []crypto.PublicKey{key.Public()}); err == nil {
		t.Error("an http issuer was accepted")
	}
}
