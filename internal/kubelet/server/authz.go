package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SubjectAccessReviewer creates SubjectAccessReviews; client-go's
// AuthorizationV1().SubjectAccessReviews() is one.
type SubjectAccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// How long SubjectAccessReview answers are kept: upstream's kubelet
// defaults (--authorization-webhook-cache-authorized-ttl and
// -unauthorized-ttl). Errors are not kept.
const (
	authzAllowedTTL = 5 * time.Minute
	authzRefusedTTL = 30 * time.Second
	authzCacheMax   = 4096
	authzLimit      = 10 * time.Second
)

// Paths with their own nodes subresource. The fine-grained ones
// (KubeletFineGrainedAuthz, GA and locked on since 1.36) are tried first
// and fall back to nodes/proxy; the others replace nodes/proxy.
var (
	fineGrainedPaths = []struct{ prefix, subresource string }{
		{"/pods", "pods"},
		{"/healthz", "healthz"},
		{"/configz", "configz"},
		{"/statusz", "statusz"},
		{"/runningpods", "pods"},
	}
	ownPaths = []struct{ prefix, subresource string }{
		{"/stats", "stats"},
		{"/metrics", "metrics"},
		{"/logs", "log"}, // "log", as pods/log
		{"/checkpoint", "checkpoint"},
	}
)

// requestVerb is the API verb of an HTTP method, as upstream's kubelet
// maps it: methods it does not name (HEAD, OPTIONS …) get an empty verb,
// which only a "*" rule allows.
func requestVerb(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// requestSubresources are the nodes subresources that may allow a request
// for path, in the order they are asked: any one allowing is enough.
// Everything without its own subresource (exec, attach, portForward,
// containerLogs, run …) is nodes/proxy.
func requestSubresources(path string) []string {
	var subresources []string
	for _, p := range fineGrainedPaths {
		if underPath(path, p.prefix) {
			subresources = append(subresources, p.subresource)
			break
		}
	}
	for _, p := range ownPaths {
		if underPath(path, p.prefix) {
			return append(subresources, p.subresource)
		}
	}
	return append(subresources, "proxy")
}

// underPath reports whether path is prefix or below it ("/stats" and
// "/stats/summary" are under "/stats"; "/statsx" is not).
func underPath(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || rest[0] == '/')
}

// authorizer asks the apiserver whether a user may do a request on this
// node's kubelet API, as upstream's kubelet does in authorization mode
// Webhook, and keeps the answers.
type authorizer struct {
	reviews SubjectAccessReviewer // nil refuses everything
	node    string
	now     func() time.Time
	log     *slog.Logger
	cache   *reviewCache[bool]
}

func newAuthorizer(reviews SubjectAccessReviewer, node string, now func() time.Time, log *slog.Logger) *authorizer {
	return &authorizer{reviews: reviews, node: node, now: now, log: log, cache: newReviewCache[bool](authzCacheMax)}
}

// wrap lets a request through when the authenticated user (put in the
// context by the authenticator) is allowed one of the request's nodes
// subresources; otherwise it answers 403 in upstream's words, or 500 when
// the apiserver could not be asked.
func (z *authorizer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := r.Context().Value(userKey{}).(*user)
		if u == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb, subresources := requestVerb(r.Method), requestSubresources(r.URL.Path)
		if z.reviews == nil {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v): this kubelet was started without a SubjectAccessReview client, so it cannot ask the apiserver and refuses every request", u.Name, verb, subresources), http.StatusForbidden)
			return
		}
		for _, sub := range subresources {
			allowed, err := z.allowed(r.Context(), u, verb, sub)
			if err != nil {
				z.log.Error("could not authorize a request", "user", u.Name, "verb", verb, "subresource", sub, "err", err)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, verb, sub), http.StatusInternalServerError)
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
		}
		z.log.Debug("forbidden", "user", u.Name, "verb", verb, "subresources", subresources)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", u.Name, verb, subresources), http.StatusForbidden)
	})
}

// allowed asks the apiserver whether u may verb nodes/sub of this node,
// through the cache.
func (z *authorizer) allowed(ctx context.Context, u *user, verb, sub string) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes", Subresource: sub, Name: z.node},
		User:               u.Name,
		UID:                u.UID,
		Groups:             u.Groups,
	}
	for k, v := range u.Extra {
		if spec.Extra == nil {
			spec.Extra = map[string]authorizationv1.ExtraValue{}
		}
		spec.Extra[k] = v
	}
	question, err := json.Marshal(spec) // map keys sorted: the same spec is the same key
	if err != nil {
		return false, err
	}
	key := sha256.Sum256(question)
	now := z.now()
	if allowed, ok := z.cache.get(key, now); ok {
		return allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, authzLimit)
	defer cancel()
	res, err := z.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview for nodes/%s: %w", sub, err)
	}
	allowed := res.Status.Allowed && !res.Status.Denied
	ttl := authzRefusedTTL
	if allowed {
		ttl = authzAllowedTTL
	}
	z.cache.put(key, allowed, now, ttl)
	return allowed, nil
}
