package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReviewer creates TokenReviews; client-go's
// AuthenticationV1().TokenReviews() is one.
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// user is an authenticated caller; UID and Extra come from TokenReviews
// and travel on to SubjectAccessReviews.
type user struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// How long TokenReview answers are kept, as upstream's kubelet keeps them
// (--authentication-token-webhook-cache-ttl, and a short time for refusals).
const (
	tokenCacheTTL    = 2 * time.Minute
	tokenRefusalTTL  = 10 * time.Second
	tokenCacheMax    = 4096
	tokenReviewLimit = 10 * time.Second
)

type authenticator struct {
	reviews TokenReviewer
	now     func() time.Time
	cache   *reviewCache[*user] // a nil user: refused
}

func newAuthenticator(reviews TokenReviewer, now func() time.Time) *authenticator {
	return &authenticator{reviews: reviews, now: now, cache: newReviewCache[*user](tokenCacheMax)}
}

type userKey struct{}

// wrap answers 401 unless the request carries a client certificate the
// TLS layer verified against the cluster CA or a token the apiserver
// accepts. What the user may do is the authorizer's business (authz.go).
func (a *authenticator) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := a.authenticate(r)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// Nothing past here needs the credential, and the runtime must not see it.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

func (a *authenticator) authenticate(r *http.Request) (*user, bool) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName != "" {
			return &user{Name: cert.Subject.CommonName, Groups: cert.Subject.Organization}, true
		}
	}
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok || a.reviews == nil {
		return nil, false
	}
	return a.review(r.Context(), token)
}

// review asks the apiserver about token, through the cache.
func (a *authenticator) review(ctx context.Context, token string) (*user, bool) {
	key := sha256.Sum256([]byte(token))
	now := a.now()
	if u, ok := a.cache.get(key, now); ok {
		return u, u != nil
	}
	ctx, cancel := context.WithTimeout(ctx, tokenReviewLimit)
	defer cancel()
	res, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false // not cached: the apiserver may answer next time
	}
	var u *user
	ttl := tokenRefusalTTL
	if res.Status.Authenticated && res.Status.User.Username != "" {
		info := res.Status.User
		u, ttl = &user{Name: info.Username, UID: info.UID, Groups: info.Groups}, tokenCacheTTL
		for k, v := range info.Extra {
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[k] = append([]string(nil), v...)
		}
	}
	a.cache.put(key, u, now, ttl)
	return u, u != nil
}

// bearerToken reads "Bearer TOKEN" (scheme case-insensitive).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if i := strings.IndexByte(token, ' '); i >= 0 {
		token = token[:i]
	}
	return token, token != ""
}
