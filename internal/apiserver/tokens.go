package apiserver

import (
	"context"
	"crypto"
	"fmt"
	"net/http"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"

	"orch/internal/apiserver/admission/noderestriction"
	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/satoken"
)

// tokens is what the server needs to issue and check service account
// tokens; nil when Config has no ServiceAccountKey.
type tokens struct {
	signer    *satoken.Signer
	authn     *satoken.Authenticator
	discovery *satoken.Discovery
	audiences []string
}

// DefaultIssuer is the service account issuer for a cluster domain
// (https://kubernetes.default.svc.DOMAIN, as k3s and kubeadm set it).
func DefaultIssuer(clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = "cluster.local"
	}
	return "https://kubernetes.default.svc." + clusterDomain
}

func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// newTokens builds the signer, the authenticator and the discovery
// documents from cfg.
func newTokens(s *Server, cfg Config) (*tokens, error) {
	issuer := cfg.ServiceAccountIssuer
	if issuer == "" {
		issuer = DefaultIssuer(cfg.ClusterDomain)
	}
	audiences := cfg.APIAudiences
	if len(audiences) == 0 {
		audiences = []string{issuer}
	}
	signer, err := satoken.NewSigner(issuer, cfg.ServiceAccountKey)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service account key: %w", err)
	}
	external := cfg.ExternalAddress
	if external == "" {
		external = "kubernetes.default.svc"
	}
	discovery, err := satoken.NewDiscovery(issuer, satoken.JWKSURI(external), []crypto.PublicKey{signer.Public()})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	authn := &satoken.Authenticator{Issuers: []string{issuer}, Keys: []crypto.PublicKey{signer.Public()},
		Audiences: audiences, Getter: storeGetter{s}, Now: s.now}
	return &tokens{signer: signer, authn: authn, discovery: discovery, audiences: audiences}, nil
}

// AuthenticateToken checks a service account token for the apiserver's
// audiences; it is what filters.Authenticate calls for bearer tokens.
func (s *Server) AuthenticateToken(ctx context.Context, token string) (filters.User, error) {
	if s.tokens == nil {
		return filters.User{}, fmt.Errorf("invalid bearer token")
	}
	u, err := s.tokens.authn.Authenticate(ctx, token, nil)
	if err != nil {
		return filters.User{}, err
	}
	return filters.User{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}, nil
}

var _ filters.TokenAuthenticator = (*Server)(nil)

// storeGetter reads the objects tokens name straight from storage, so a
// deleted pod's tokens stop working at once.
type storeGetter struct{ s *Server }

func (g storeGetter) Get(ctx context.Context, resource, namespace, name string) (metav1.Object, error) {
	rs := g.s.resources[corev1.SchemeGroupVersion.WithResource(resource)]
	if rs == nil {
		return nil, fmt.Errorf("%s are not served", resource)
	}
	obj, err := rs.get(ctx, namespace, name)
	if isNotFound(err) {
		return nil, apierrors.NewNotFound(rs.gr, name)
	}
	if err != nil {
		return nil, err
	}
	return mustAccessor(obj), nil
}

var tokenRequestGK = schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}

// createToken is serviceaccounts/token, upstream's TokenREST.Create: a
// token for the service account, optionally bound to a pod, secret or node.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	out, err := s.issueToken(r, info, rs)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, http.StatusCreated, out)
}

func (s *Server) issueToken(r *http.Request, info requestInfo, rs *resourceStore) (*authenticationv1.TokenRequest, error) {
	if s.tokens == nil {
		return nil, notImplemented("serviceaccounts/token without a service account signing key")
	}
	ctx := r.Context()
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	req := &authenticationv1.TokenRequest{}
	if err := s.decodeInto(r, data, req); err != nil {
		return nil, err
	}
	if err := s.admitNode(ctx, noderestriction.Create, rs, "token", info.Namespace, info.Name, req, nil); err != nil {
		return nil, err
	}
	if req.Spec.ExpirationSeconds == nil {
		seconds := int64(satoken.DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &seconds
	}
	if req.Name != "" && req.Name != info.Name {
		return nil, apierrors.NewInvalid(tokenRequestGK, info.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != info.Namespace {
		return nil, apierrors.NewInvalid(tokenRequestGK, info.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	obj, err := rs.get(ctx, info.Namespace, info.Name)
	if err != nil {
		return nil, err
	}
	sa := obj.(*corev1.ServiceAccount)
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, info.Name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = s.tokens.audiences
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	now := s.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	binding, err := s.boundObject(ctx, req, info)
	if err != nil {
		return nil, err
	}
	if max := int64(s.cfg.ServiceAccountMaxTokenExpiration / time.Second); max > 0 && *req.Spec.ExpirationSeconds > max {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		req.Spec.ExpirationSeconds = &max
	}
	exp, warnAfter := *req.Spec.ExpirationSeconds, int64(0)
	if !s.cfg.NoExtendedTokenExpiration && binding.Pod != nil && exp == satoken.WarnOnlyBoundTokenExpirationSeconds && subset(req.Spec.Audiences, s.tokens.audiences) {
		// Upstream's extended expiry for the tokens the kubelet projects.
		warnAfter, exp = exp, satoken.ExpirationExtensionSeconds
	}
	claims, err := satoken.NewClaims(sa, binding, now, exp, warnAfter, req.Spec.Audiences)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	token, err := s.tokens.signer.Sign(claims)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))}
	req.APIVersion, req.Kind = authenticationv1.SchemeGroupVersion.String(), "TokenRequest"
	return req, nil
}

// validateTokenRequest is upstream's ValidateTokenRequest for the
// references orch serves (no webhook configurations, so no attestations).
func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	seconds := *req.Spec.ExpirationSeconds
	if seconds < satoken.MinExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), seconds, "may not specify a duration less than 10 minutes"))
	}
	if seconds > 1<<32 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), seconds, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(req.Spec.Attestations) != 0 {
		return field.ErrorList{field.Invalid(spec.Child("attestations"), req.Spec.Attestations, "attestations may only be specified with a webhook bound object reference")}
	}
	return errs
}

// boundObject looks up the object a token request binds to: a pod (which
// must run as the service account; its node is looked up too), a secret or
// a node, with the UID the reference gives.
func (s *Server) boundObject(ctx context.Context, req *authenticationv1.TokenRequest, info requestInfo) (satoken.Binding, error) {
	var b satoken.Binding
	ref := req.Spec.BoundObjectRef
	if ref == nil {
		return b, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	get := func(resource, namespace, name string) (any, error) {
		rs := s.resources[corev1.SchemeGroupVersion.WithResource(resource)]
		obj, err := rs.get(ctx, namespace, name)
		if isNotFound(err) {
			return nil, apierrors.NewNotFound(rs.gr, name)
		}
		return obj, err
	}
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		obj, err := get("pods", info.Namespace, ref.Name)
		if err != nil {
			return b, err
		}
		b.Pod = obj.(*corev1.Pod)
		if b.Pod.Spec.ServiceAccountName != info.Name {
			return b, badRequest("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", info.Name)
		}
		uid = string(b.Pod.UID)
		if nodeName := b.Pod.Spec.NodeName; nodeName != "" {
			obj, err := get("nodes", "", nodeName)
			switch {
			case apierrors.IsNotFound(err):
				// The node's name still tells where the pod runs.
				b.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
			case err != nil:
				return b, apierrors.NewInternalError(err)
			default:
				b.Node = obj.(*corev1.Node)
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		obj, err := get("nodes", "", ref.Name)
		if err != nil {
			return b, err
		}
		b.Node = obj.(*corev1.Node)
		uid = string(b.Node.UID)
	case gvk.Group == "" && gvk.Kind == "Secret":
		obj, err := get("secrets", info.Namespace, ref.Name)
		if err != nil {
			return b, err
		}
		b.Secret = obj.(*corev1.Secret)
		uid = string(b.Secret.UID)
	default:
		return b, badRequest("cannot bind token to object of type %s", gvk.String())
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return b, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return b, nil
}

// subset is true when every audience in auds is one of the apiserver's.
func subset(auds, apiserver []string) bool {
	for _, a := range auds {
		found := false
		for _, b := range apiserver {
			found = found || a == b
		}
		if !found {
			return false
		}
	}
	return true
}

// serveIssuerDiscovery answers the OpenID configuration and the key set of
// the service account issuer (upstream's ServiceAccountIssuerDiscovery).
func (s *Server) serveIssuerDiscovery(w http.ResponseWriter, r *http.Request) {
	if s.tokens == nil {
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.respondError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method), schema.GroupResource{}, "")
		return
	}
	body, mediaType := s.tokens.discovery.Config, mediaJSON
	if r.URL.Path == satoken.JWKSPath {
		body, mediaType = s.tokens.discovery.JWKS, satoken.JWKSMediaType
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(satoken.DiscoveryMaxAge))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}
