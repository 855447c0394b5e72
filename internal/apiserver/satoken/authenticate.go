package satoken

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The resources a token can name, as Getter.Get is asked for them.
const (
	ServiceAccounts = "serviceaccounts"
	Pods            = "pods"
	Secrets         = "secrets"
	Nodes           = "nodes"
)

// Getter returns the metadata of a stored object (namespace is "" for
// nodes), or an error (a NotFound one when it does not exist).
type Getter interface {
	Get(ctx context.Context, resource, namespace, name string) (metav1.Object, error)
}

// Keys that upstream puts in a service account user's extra.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// User is who a valid token authenticates, and for which audiences.
type User struct {
	Name      string
	UID       string
	Groups    []string
	Extra     map[string][]string
	Audiences []string
}

// Authenticator checks tokens signed by one of Keys for one of Issuers.
type Authenticator struct {
	Issuers []string
	Keys    []crypto.PublicKey
	// Audiences are the apiserver's: what a token with no aud is taken to
	// be for, and what a request is for unless it says otherwise.
	Audiences []string
	Getter    Getter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// errNotOurs is returned by a token that is not a JWT of our issuers;
// upstream reports it as "invalid bearer token".
var errNotOurs = errors.New("invalid bearer token")

// IsNotOurs reports whether err says the token is not a service account
// token of this cluster at all (not a JWT, or another issuer).
func IsNotOurs(err error) bool { return errors.Is(err, errNotOurs) }

// Authenticate checks token for the requested audiences (nil means the
// apiserver's) as upstream's JWT token authenticator and bound-token
// validator do: the issuer, the signature, the audiences, exp/nbf/iat with
// Leeway, that the service account still exists with the same UID, and
// that a bound pod, secret or node still exists with the UID in the token
// and was not marked for deletion more than Leeway ago. The error says why
// a token was refused, in upstream's words.
func (a *Authenticator) Authenticate(ctx context.Context, token string, requested []string) (*User, error) {
	if !a.hasOurIssuer(token) {
		return nil, errNotOurs
	}
	claims, err := a.verify(token)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(a.Issuers, claims.Issuer) {
		return nil, fmt.Errorf("token issuer %q is invalid", claims.Issuer)
	}
	tokenAuds := []string(claims.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.Audiences // legacy tokens are for the apiserver only
	}
	if requested == nil {
		requested = a.Audiences
	}
	auds := intersect(tokenAuds, requested)
	if len(auds) == 0 && len(a.Audiences) != 0 {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, requested)
	}
	user, err := a.validate(ctx, claims)
	if err != nil {
		return nil, err
	}
	user.Audiences = auds
	return user, nil
}

// hasOurIssuer peeks, unverified, at the iss claim of a compact JWT.
func (a *Authenticator) hasOurIssuer(token string) bool {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return false
	}
	return slices.Contains(a.Issuers, claims.Issuer)
}

// verify checks the signature against each key and returns the claims.
func (a *Authenticator) verify(token string) (*Claims, error) {
	if len(a.Keys) == 0 {
		return nil, errors.New("invalid signature, no keys found")
	}
	var errs []error
	for _, key := range a.Keys {
		method, err := methodFor(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		claims := &Claims{}
		parser := jwt.NewParser(jwt.WithValidMethods([]string{method.Alg()}), jwt.WithoutClaimsValidation())
		if _, err := parser.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
			errs = append(errs, err)
			continue
		}
		return claims, nil
	}
	return nil, errors.Join(errs...)
}

// validate is upstream's bound token validator.
func (a *Authenticator) validate(ctx context.Context, c *Claims) (*User, error) {
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	switch {
	case c.NotBefore != nil && now.Add(Leeway).Before(c.NotBefore.Time):
		return nil, errors.New("service account token is not valid yet")
	case c.ExpiresAt != nil && now.Add(-Leeway).After(c.ExpiresAt.Time):
		return nil, errors.New("service account token has expired")
	case c.IssuedAt != nil && now.Add(Leeway).Before(c.IssuedAt.Time):
		return nil, errors.New("service account token is issued in the future")
	}
	deletedBefore := now.Add(-Leeway)
	gone := func(obj metav1.Object) bool {
		ts := obj.GetDeletionTimestamp()
		return ts != nil && ts.Time.Before(deletedBefore)
	}
	k := c.Kubernetes
	ns, sa := k.Namespace, k.ServiceAccount
	account, err := a.Getter.Get(ctx, ServiceAccounts, ns, sa.Name)
	if err != nil {
		return nil, err
	}
	if string(account.GetUID()) != sa.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", account.GetUID(), sa.UID)
	}
	if gone(account) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, sa.Name)
	}
	invalidated := errors.New("service account token has been invalidated")
	if ref := k.Secret; ref != nil {
		secret, err := a.Getter.Get(ctx, Secrets, ns, ref.Name)
		if err != nil {
			return nil, invalidated
		}
		if string(secret.GetUID()) != ref.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.GetUID(), ref.UID)
		}
		if gone(secret) {
			return nil, invalidated
		}
	}
	user := &User{Name: Username(ns, sa.Name), UID: sa.UID, Groups: Groups(ns)}
	extra := map[string][]string{}
	if ref := k.Pod; ref != nil {
		pod, err := a.Getter.Get(ctx, Pods, ns, ref.Name)
		if err != nil {
			return nil, invalidated
		}
		if string(pod.GetUID()) != ref.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.GetUID(), ref.UID)
		}
		if gone(pod) {
			return nil, invalidated
		}
		if ref.Name != "" && ref.UID != "" {
			extra[ExtraPodName], extra[ExtraPodUID] = []string{ref.Name}, []string{ref.UID}
		}
	}
	if ref := k.Node; ref != nil {
		if k.Pod == nil {
			node, err := a.Getter.Get(ctx, Nodes, "", ref.Name)
			if err != nil {
				return nil, invalidated
			}
			if string(node.GetUID()) != ref.UID {
				return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.GetUID(), ref.UID)
			}
			if gone(node) {
				return nil, invalidated
			}
		}
		if ref.Name != "" {
			extra[ExtraNodeName] = []string{ref.Name}
			if ref.UID != "" {
				extra[ExtraNodeUID] = []string{ref.UID}
			}
		}
	}
	if c.ID != "" {
		extra[ExtraCredentialID] = []string{"JTI=" + c.ID}
	}
	if len(extra) > 0 {
		user.Extra = extra
	}
	return user, nil
}

// intersect is the audiences of requested that the token has, in the
// order of requested (upstream's Audiences.Intersect).
func intersect(token, requested []string) []string {
	out := []string{}
	for _, x := range requested {
		if slices.Contains(token, x) {
			out = append(out, x)
		}
	}
	return out
}
