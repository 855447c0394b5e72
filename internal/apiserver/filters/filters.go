// Package filters holds the HTTP middleware in front of the API handlers:
// authentication (client certificates and bearer tokens), panic recovery and
// request limits. Each is a
// func(http.Handler) http.Handler.
package filters

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/authz"
)

// User is the authenticated identity of a request.
type User = authz.User

// TokenAuthenticator checks a bearer token for the apiserver's audiences
// and returns its user, or an error saying why it is refused.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (User, error)
}

// CertificateChecker may refuse a client certificate the CA signed, e.g.
// one of a node that has since been deleted.
type CertificateChecker interface {
	CheckCertificate(ctx context.Context, cert *x509.Certificate, user User) error
}

// AuthenticatedGroup is the group every authenticated user is in.
const AuthenticatedGroup = "system:authenticated"

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
// the cluster CA (CN is the user, O the groups) and certs (nil for all)
// does not refuse, then bearer tokens that tokens (nil for none) accepts;
// every user also gets the group system:authenticated. A credential that
// is refused gets 401 on any path, as upstream; anonymous requests get 401
// outside the public paths. failed (nil for none) is told of every 401
// first and writes it (AuditFailures).
func Authenticate(tokens TokenAuthenticator, certs CertificateChecker, failed func(http.Handler) http.Handler, next http.Handler) http.Handler {
	var unauthorized http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeUnauthorized(w) })
	if failed != nil {
		unauthorized = failed(unauthorized)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, cert, ok := certificateUser(r); ok {
			if certs != nil {
				if err := certs.CheckCertificate(r.Context(), cert, user); err != nil {
					unauthorized.ServeHTTP(w, r)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), user)))
			return
		}
		if token, ok := BearerToken(r.Header.Get("Authorization")); ok && tokens != nil {
			user, err := tokens.AuthenticateToken(r.Context(), token)
			if err != nil {
				unauthorized.ServeHTTP(w, r)
				return
			}
			if !slices.Contains(user.Groups, AuthenticatedGroup) {
				user.Groups = append(slices.Clip(user.Groups), AuthenticatedGroup)
			}
			// Nothing past this point needs the credential (upstream drops it too).
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), user)))
			return
		}
		if publicPaths[r.URL.Path] || strings.HasPrefix(r.URL.Path, "/readyz/") || strings.HasPrefix(r.URL.Path, "/livez/") || strings.HasPrefix(r.URL.Path, "/healthz/") {
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}})))
			return
		}
		unauthorized.ServeHTTP(w, r)
	})
}

func writeUnauthorized(w http.ResponseWriter) {
	WriteStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnauthorized, Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized"})
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN" header
// value, read as upstream reads it (scheme case-insensitive, the token up to
// the next space); false when there is none.
func BearerToken(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// certificateUser is the identity of a client certificate that the TLS
// handshake verified against the cluster CA (the listener asks for client
// certificates with VerifyClientCertIfGiven and ClientCAs, so a chain in
// VerifiedChains is one the CA signed for client auth).
func certificateUser(r *http.Request) (User, *x509.Certificate, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return User{}, nil, false
	}
	cert := r.TLS.VerifiedChains[0][0]
	if cert.Subject.CommonName == "" {
		return User{}, nil, false
	}
	groups := slices.Clone(cert.Subject.Organization)
	if !slices.Contains(groups, AuthenticatedGroup) {
		groups = append(groups, AuthenticatedGroup)
	}
	return User{Name: cert.Subject.CommonName, Groups: groups}, cert, true
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
