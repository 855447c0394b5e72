// Package filters holds the HTTP middleware in front of the API handlers:
// authentication, panic recovery and request limits. Each is a
// func(http.Handler) http.Handler.
package filters

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// User is the authenticated identity of a request.
type User struct {
	Name   string
	Groups []string
}

type userKey struct{}

// UserFrom returns the user that Authenticate put in ctx.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// WithUser returns ctx carrying user.
func WithUser(ctx context.Context, user User) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// publicPaths answer anonymous requests, as upstream's default RBAC allows.
var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true, "/version/": true}

// Authenticate accepts client certificates the TLS layer verified against
// the cluster CA (CN is the user, O the groups) and answers 401 to anonymous
// requests outside the public paths.
func Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, ok := certificateUser(r); ok {
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), user)))
			return
		}
		if publicPaths[r.URL.Path] || strings.HasPrefix(r.URL.Path, "/readyz/") || strings.HasPrefix(r.URL.Path, "/livez/") || strings.HasPrefix(r.URL.Path, "/healthz/") {
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}})))
			return
		}
		WriteStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnauthorized, Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized"})
	})
}

// certificateUser is the identity of a client certificate that the TLS
// handshake verified against the cluster CA (the listener asks for client
// certificates with VerifyClientCertIfGiven and ClientCAs, so a chain in
// VerifiedChains is one the CA signed for client auth).
func certificateUser(r *http.Request) (User, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return User{}, false
	}
	cert := r.TLS.VerifiedChains[0][0]
	if cert.Subject.CommonName == "" {
		return User{}, false
	}
	return User{Name: cert.Subject.CommonName, Groups: append(cert.Subject.Organization, "system:authenticated")}, true
}

// Recover turns a panic in a handler into a 500 Status and a log line, so
// one bad request never takes the server down.
func Recover(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				WriteStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
					Reason: metav1.StatusReasonInternalError, Message: "Internal error occurred: the server hit a bug; see its log"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// WriteStatus writes a Status as JSON (used before content negotiation).
func WriteStatus(w http.ResponseWriter, status metav1.Status) {
	status.APIVersion, status.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":%q,"message":%q,"reason":%q,"code":%d}`+"\n",
		status.Status, status.Message, status.Reason, status.Code)
}
