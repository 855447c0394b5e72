// Package satoken issues and checks service account tokens the way
// kube-apiserver does (pkg/serviceaccount): JWTs signed with the cluster's
// service account key (RS256 for RSA, ES256/384/512 for ECDSA), with the
// registered claims iss, sub, aud, exp, iat, nbf and jti and the private
// "kubernetes.io" claim naming the namespace, the service account and the
// object the token is bound to (a pod and its node, a secret, or a node).
//
// The package is pure: NewClaims builds claims from objects and a time,
// Signer signs them, Authenticator parses, verifies and validates a token
// against an injected clock and a Getter that looks the referenced objects
// up, and Discovery renders the OpenID configuration and JWKS documents.
// The apiserver wires it to its storage and its HTTP routes.
package satoken

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Upstream's constants for tokens the kubelet projects into pods.
const (
	// WarnOnlyBoundTokenExpirationSeconds is the expirationSeconds the
	// ServiceAccount admission asks for in kube-api-access volumes; such
	// pod-bound tokens for the apiserver's audiences are extended.
	WarnOnlyBoundTokenExpirationSeconds = 60*60 + 7
	// ExpirationExtensionSeconds is how long an extended token lives (a year).
	ExpirationExtensionSeconds = 24 * 365 * 60 * 60
	// MinExpirationSeconds is the shortest token a TokenRequest may ask for.
	MinExpirationSeconds = 10 * 60
	// DefaultExpirationSeconds is a TokenRequest's default lifetime.
	DefaultExpirationSeconds = 60 * 60
)

// Leeway is the clock skew allowed when checking exp, nbf and iat, and how
// long a bound object may have been marked for deletion before its tokens
// stop working (go-jose's DefaultLeeway, which upstream uses).
const Leeway = time.Minute

// Claims are the claims of a service account token.
type Claims struct {
	jwt.RegisteredClaims
	Kubernetes Private `json:"kubernetes.io"`
}

// Private is the "kubernetes.io" claim.
type Private struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount Ref              `json:"serviceaccount"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// Ref names an object by name and UID.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Binding is what a token is bound to: a pod (and the node it runs on, when
// known), a secret, or a node; all nil for an unbound token.
type Binding struct {
	Pod    *corev1.Pod
	Node   *corev1.Node
	Secret *corev1.Secret
}

// NewClaims builds the claims of a token for sa, bound as b, valid from now
// for expirationSeconds, for the audiences; warnAfter (seconds, 0 for none)
// marks an extended token. The issuer is left to the Signer.
func NewClaims(sa *corev1.ServiceAccount, b Binding, now time.Time, expirationSeconds, warnAfter int64, audiences []string) (*Claims, error) {
	if b.Secret != nil && (b.Pod != nil || b.Node != nil) {
		return nil, fmt.Errorf("a token can be bound to one object only")
	}
	c := &Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   Username(sa.Namespace, sa.Name),
			Audience:  jwt.ClaimStrings(audiences),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Duration(expirationSeconds) * time.Second)),
			ID:        string(uuid.NewUUID()),
		},
		Kubernetes: Private{Namespace: sa.Namespace, ServiceAccount: Ref{Name: sa.Name, UID: string(sa.UID)}},
	}
	switch {
	case b.Pod != nil:
		c.Kubernetes.Pod = &Ref{Name: b.Pod.Name, UID: string(b.Pod.UID)}
		if b.Node != nil {
			c.Kubernetes.Node = &Ref{Name: b.Node.Name, UID: string(b.Node.UID)}
		}
	case b.Secret != nil:
		c.Kubernetes.Secret = &Ref{Name: b.Secret.Name, UID: string(b.Secret.UID)}
	case b.Node != nil:
		c.Kubernetes.Node = &Ref{Name: b.Node.Name, UID: string(b.Node.UID)}
	}
	if warnAfter != 0 {
		c.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(time.Duration(warnAfter) * time.Second))
	}
	return c, nil
}

// The user names and groups of service accounts, as upstream.
const (
	UserPrefix       = "system:serviceaccount:"
	AllGroup         = "system:serviceaccounts"
	NamespaceGroupOf = "system:serviceaccounts:"
)

// Username is system:serviceaccount:NAMESPACE:NAME.
func Username(namespace, name string) string { return UserPrefix + namespace + ":" + name }

// Groups are the groups of a service account in namespace.
func Groups(namespace string) []string {
	return []string{AllGroup, NamespaceGroupOf + namespace}
}
