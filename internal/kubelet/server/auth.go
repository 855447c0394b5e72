package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReviewer creates TokenReviews; client-go's
// AuthenticationV1().TokenReviews() is one.
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// user is an authenticated caller.
type user struct {
	Name   string
	Groups []string
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

	mu    sync.Mutex
	cache map[[32]byte]cachedReview
}

type cachedReview struct {
	user    *user // nil: refused
	expires time.Time
}

func newAuthenticator(reviews TokenReviewer, now func() time.Time) *authenticator {
	return &authenticator{reviews: reviews, now: now, cache: map[[32]byte]cachedReview{}}
}

type userKey struct{}

// wrap answers 401 unless the request carries a client certificate the
// TLS layer verified against the cluster CA or a token the apiserver
// accepts. Every authenticated user may do everything (see the package doc).
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
	a.mu.Lock()
	if c, ok := a.cache[key]; ok && now.Before(c.expires) {
		a.mu.Unlock()
		return c.user, c.user != nil
	}
	a.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, tokenReviewLimit)
	defer cancel()
	res, err := a.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false // not cached: the apiserver may answer next time
	}
	var u *user
	ttl := tokenRefusalTTL
	if res.Status.Authenticated && res.Status.User.Username != "" {
		u, ttl = &user{Name: res.Status.User.Username, Groups: res.Status.User.Groups}, tokenCacheTTL
	}
	a.mu.Lock()
	if len(a.cache) >= tokenCacheMax {
		for k, c := range a.cache {
			if !now.Before(c.expires) || len(a.cache) >= tokenCacheMax {
				delete(a.cache, k)
			}
		}
	}
	a.cache[key] = cachedReview{user: u, expires: now.Add(ttl)}
	a.mu.Unlock()
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
