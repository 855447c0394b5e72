package filters_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/satoken"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

var account = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team", UID: "sa-uid"}}

// oneAccount knows the service account above and nothing else.
type oneAccount struct{}

func (oneAccount) Get(_ context.Context, resource, namespace, name string) (metav1.Object, error) {
	if resource == satoken.ServiceAccounts && namespace == account.Namespace && name == account.Name {
		return account, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// tokenUsers adapts a satoken.Authenticator to filters.TokenAuthenticator
// as the apiserver does.
type tokenUsers struct{ authn *satoken.Authenticator }

func (t tokenUsers) AuthenticateToken(ctx context.Context, token string) (filters.User, error) {
	u, err := t.authn.Authenticate(ctx, token, nil)
	if err != nil {
		return filters.User{}, err
	}
	return filters.User{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}, nil
}

// FuzzBearerToken sends arbitrary Authorization headers through
// Authenticate and the service account token checks: every request ends in
// 401 or, for a token that still verifies, 200 as the service account;
// nothing panics or answers 500.
func FuzzBearerToken(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // quick to make; RS256 is covered in satoken
	signer, err := satoken.NewSigner(issuer, key)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now()
	claims, _ := satoken.NewClaims(account, satoken.Binding{}, now, 3600, 0, []string{issuer})
	valid, err := signer.Sign(claims)
	if err != nil {
		f.Fatal(err)
	}
	authn := &satoken.Authenticator{Issuers: []string{issuer}, Keys: []crypto.PublicKey{key.Public()},
		Audiences: []string{issuer}, Getter: oneAccount{}, Now: func() time.Time { return now }}
	var seen filters.User
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = filters.UserFrom(r.Context())
		w.WriteHeader(http.StatusOK)
	})
	handler := filters.Recover(slog.New(slog.NewTextHandler(io.Discard, nil)), filters.Authenticate(tokenUsers{authn}, nil, nil, ok))

	for _, seed := range []string{
		"Bearer " + valid, "bearer " + valid + " trailing", "Bearer " + valid[:len(valid)-3], "Bearer " + valid + "x",
		"Bearer a.b.c", "Bearer ..", "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.",
		"Bearer eyJ9.eyJ9.eyJ9", `Bearer {"iss":"x"}`, "Bearer", "Basic dXNlcjpwYXNz", "Bearer \x00\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		seen = filters.User{}
		handler.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusUnauthorized:
		case w.Code == http.StatusOK && seen.Name == "system:serviceaccount:team:default":
		default:
			t.Fatalf("header %q: status %d, user %+v", header, w.Code, seen)
		}
	})
}

// TestAuthenticateUsers: certificate-less requests with a good token get
// the service account user plus system:authenticated and lose their
// Authorization header; a bad token is 401 even on a public path.
func TestAuthenticateUsers(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := satoken.NewSigner(issuer, key)
	now := time.Now()
	claims, _ := satoken.NewClaims(account, satoken.Binding{}, now, 3600, 0, nil)
	valid, _ := signer.Sign(claims)
	authn := &satoken.Authenticator{Issuers: []string{issuer}, Keys: []crypto.PublicKey{key.Public()},
		Audiences: []string{issuer}, Getter: oneAccount{}, Now: func() time.Time { return now }}
	var seen filters.User
	var header string
	handler := filters.Authenticate(tokenUsers{authn}, nil, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = filters.UserFrom(r.Context())
		header = r.Header.Get("Authorization")
	}))

	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.Header.Set("Authorization", "Bearer "+valid)
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	want := "system:serviceaccounts,system:serviceaccounts:team,system:authenticated"
	if w.Code != http.StatusOK || seen.Name != "system:serviceaccount:team:default" || seen.UID != "sa-uid" || strings.Join(seen.Groups, ",") != want || header != "" {
		t.Errorf("good token: %d %+v header %q", w.Code, seen, header)
	}

	for _, path := range []string{"/healthz", "/api"} {
		r = httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer nope")
		w = httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("bad token on %s: %d, want 401", path, w.Code)
		}
	}
	r = httptest.NewRequest(http.MethodGet, "/healthz", nil)
	w = httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	if w.Code != http.StatusOK || seen.Name != "system:anonymous" {
		t.Errorf("anonymous /healthz: %d %+v", w.Code, seen)
	}
}
