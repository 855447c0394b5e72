package apiserver

import (
	"context"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/filters"
)

// virtualResource is a resource that is answered and never stored: the
// create-only, cluster-scoped reviews (TokenReview, SelfSubjectReview) and
// the read-only metrics of metrics.k8s.io (metricsapi.go).
type virtualResource struct {
	gvr            schema.GroupVersionResource
	kind, singular string
	namespaced     bool
	// verbs are what discovery lists; nil means create only.
	verbs  metav1.Verbs
	create func(w http.ResponseWriter, r *http.Request, info requestInfo)
	// read answers get and list.
	read func(w http.ResponseWriter, r *http.Request, info requestInfo)
}

var createOnly = metav1.Verbs{"create"}

func (v *virtualResource) discoveryVerbs() metav1.Verbs {
	if v.verbs == nil {
		return createOnly
	}
	return v.verbs
}

// addVirtualResources registers the review resources, and the metrics
// resources when the apiserver can reach kubelets, in their groups for
// discovery and routing.
func (s *Server) addVirtualResources() {
	gv := authenticationv1.SchemeGroupVersion
	s.virtual = map[schema.GroupVersionResource]*virtualResource{}
	virtual := []*virtualResource{
		{gvr: gv.WithResource("selfsubjectreviews"), kind: "SelfSubjectReview", singular: "selfsubjectreview", create: s.selfSubjectReview},
		{gvr: gv.WithResource("tokenreviews"), kind: "TokenReview", singular: "tokenreview", create: s.tokenReview},
	}
	virtual = append(virtual, s.accessReviewResources()...)
	if s.cfg.KubeletClient != nil && s.cfg.KubeletClient.TLS != nil {
		virtual = append(virtual, s.metricsResources()...)
	}
	for _, v := range virtual {
		s.virtual[v.gvr] = v
		found := false
		for i := range s.groups {
			if s.groups[i].gv == v.gvr.GroupVersion() {
				s.groups[i].virtual, found = append(s.groups[i].virtual, v), true
			}
		}
		if !found {
			s.groups = append(s.groups, apiGroup{gv: v.gvr.GroupVersion(), virtual: []*virtualResource{v}})
		}
	}
}

// serveVirtual answers a request for a virtual resource: create for the
// reviews (at the cluster scope), get and list for the metrics.
func (s *Server) serveVirtual(w http.ResponseWriter, r *http.Request, info requestInfo, v *virtualResource) {
	gr := v.gvr.GroupResource()
	switch {
	case (info.Namespace != "" && !v.namespaced) || info.Subresource != "":
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
	case v.read != nil && (info.Verb == "get" || info.Verb == "list"):
		v.read(w, r, info)
	case v.create == nil || info.Verb != "create" || info.Name != "":
		s.respondError(w, r, apierrors.NewMethodNotSupported(gr, info.Verb), gr, info.Name)
	default:
		// A review is no object with metadata: asked for as a Table (or
		// anything else it cannot be), it answers 406, as upstream.
		if _, err := s.codecs.negotiateOutput(r); err != nil {
			s.respondError(w, r, err, gr, "")
			return
		}
		v.create(w, r, info)
	}
}

// tokenReview is upstream's TokenReview: the token is checked as a bearer
// token would be, for the audiences the review names (the apiserver's by
// default); nothing is stored.
func (s *Server) tokenReview(w http.ResponseWriter, r *http.Request, _ requestInfo) {
	gr := authenticationv1.SchemeGroupVersion.WithResource("tokenreviews").GroupResource()
	review := &authenticationv1.TokenReview{}
	data, err := readBody(r)
	if err == nil {
		err = s.decodeInto(r, data, review)
	}
	if err == nil && review.Spec.Token == "" {
		err = badRequest("token is required for TokenReview in authentication")
	}
	if err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	review.Status = authenticationv1.TokenReviewStatus{}
	if s.tokens != nil {
		s.reviewToken(r.Context(), review)
	}
	review.APIVersion, review.Kind = authenticationv1.SchemeGroupVersion.String(), "TokenReview"
	s.respond(w, r, http.StatusCreated, review)
}

func (s *Server) reviewToken(ctx context.Context, review *authenticationv1.TokenReview) {
	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = s.tokens.audiences
	}
	token, ok := filters.BearerToken("Bearer " + review.Spec.Token)
	if !ok {
		review.Status.Error = "invalid bearer token"
		return
	}
	user, err := s.tokens.authn.Authenticate(ctx, token, auds)
	if err != nil {
		review.Status.Error = err.Error()
		return
	}
	extra := map[string]authenticationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = v
	}
	review.Status.Authenticated = true
	review.Status.User = authenticationv1.UserInfo{Username: user.Name, UID: user.UID,
		Groups: append(user.Groups, filters.AuthenticatedGroup), Extra: extra}
	review.Status.Audiences = user.Audiences
}

// selfSubjectReview is upstream's SelfSubjectReview (kubectl auth whoami):
// the request's own user.
func (s *Server) selfSubjectReview(w http.ResponseWriter, r *http.Request, _ requestInfo) {
	gr := authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews").GroupResource()
	data, err := readBody(r)
	if err == nil {
		err = s.decodeInto(r, data, &authenticationv1.SelfSubjectReview{})
	}
	if err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	user, ok := filters.UserFrom(r.Context())
	if !ok {
		s.respondError(w, r, badRequest("no user present on request"), gr, "")
		return
	}
	extra := map[string]authenticationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = v
	}
	review := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(s.now())},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: user.Name, UID: user.UID, Groups: user.Groups, Extra: extra}},
	}
	review.APIVersion, review.Kind = authenticationv1.SchemeGroupVersion.String(), "SelfSubjectReview"
	s.respond(w, r, http.StatusCreated, review)
}
