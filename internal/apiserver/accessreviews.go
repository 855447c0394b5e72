package apiserver

import (
	"context"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// accessReviewResources are authorization.k8s.io/v1's reviews, answered
// by the server's authorizers and never stored: SubjectAccessReview (any
// user, for whoever may create it), LocalSubjectAccessReview (the same in
// one namespace), SelfSubjectAccessReview and SelfSubjectRulesReview (the
// caller; `kubectl auth can-i [--list]`).
func (s *Server) accessReviewResources() []*virtualResource {
	gv := authorizationv1.SchemeGroupVersion
	return []*virtualResource{
		{gvr: gv.WithResource("localsubjectaccessreviews"), kind: "LocalSubjectAccessReview", singular: "localsubjectaccessreview", namespaced: true, create: s.localSubjectAccessReview},
		{gvr: gv.WithResource("selfsubjectaccessreviews"), kind: "SelfSubjectAccessReview", singular: "selfsubjectaccessreview", create: s.selfSubjectAccessReview},
		{gvr: gv.WithResource("selfsubjectrulesreviews"), kind: "SelfSubjectRulesReview", singular: "selfsubjectrulesreview", create: s.selfSubjectRulesReview},
		{gvr: gv.WithResource("subjectaccessreviews"), kind: "SubjectAccessReview", singular: "subjectaccessreview", create: s.subjectAccessReview},
	}
}

// readReview decodes the body of a review into into and checks that its
// metadata is empty, as upstream requires; a local review may name its
// namespace (the request's).
func (s *Server) readReview(r *http.Request, into runtime.Object, kind string) error {
	data, err := readBody(r)
	if err == nil {
		err = s.decodeInto(r, data, into)
	}
	if err != nil {
		return err
	}
	meta := *into.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
	meta.ManagedFields = nil
	if kind == "LocalSubjectAccessReview" {
		meta.Namespace = ""
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind(), "",
			field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, "must be empty")})
	}
	return nil
}

func (s *Server) subjectAccessReview(w http.ResponseWriter, r *http.Request, info requestInfo) {
	review := &authorizationv1.SubjectAccessReview{}
	gr := authorizationv1.Resource("subjectaccessreviews")
	if err := s.readReview(r, review, "SubjectAccessReview"); err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	if errs := validateAccessReviewSpec(review.Spec, true); len(errs) > 0 {
		s.respondError(w, r, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs), gr, "")
		return
	}
	review.Status = s.reviewAccess(r.Context(), specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	review.APIVersion, review.Kind = authorizationv1.SchemeGroupVersion.String(), "SubjectAccessReview"
	s.respond(w, r, http.StatusCreated, review)
}

func (s *Server) localSubjectAccessReview(w http.ResponseWriter, r *http.Request, info requestInfo) {
	review := &authorizationv1.LocalSubjectAccessReview{}
	gr := authorizationv1.Resource("localsubjectaccessreviews")
	if info.Namespace == "" {
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	if err := s.readReview(r, review, "LocalSubjectAccessReview"); err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	errs := validateAccessReviewSpec(review.Spec, true)
	if review.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), review.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		s.respondError(w, r, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs), gr, "")
		return
	}
	if review.Namespace == "" {
		review.Namespace = info.Namespace
	}
	if review.Namespace != info.Namespace {
		s.respondError(w, r, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", review.Namespace, info.Namespace), gr, "")
		return
	}
	if review.Spec.ResourceAttributes.Namespace != info.Namespace {
		s.respondError(w, r, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: "+info.Namespace), gr, "")
		return
	}
	review.Status = s.reviewAccess(r.Context(), specUser(review.Spec), review.Spec.ResourceAttributes, nil)
	review.APIVersion, review.Kind = authorizationv1.SchemeGroupVersion.String(), "LocalSubjectAccessReview"
	s.respond(w, r, http.StatusCreated, review)
}

func (s *Server) selfSubjectAccessReview(w http.ResponseWriter, r *http.Request, info requestInfo) {
	review := &authorizationv1.SelfSubjectAccessReview{}
	gr := authorizationv1.Resource("selfsubjectaccessreviews")
	if err := s.readReview(r, review, "SelfSubjectAccessReview"); err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: review.Spec.ResourceAttributes, NonResourceAttributes: review.Spec.NonResourceAttributes}
	if errs := validateAccessReviewSpec(spec, false); len(errs) > 0 {
		s.respondError(w, r, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs), gr, "")
		return
	}
	user, _ := filters.UserFrom(r.Context())
	review.Status = s.reviewAccess(r.Context(), user, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	review.APIVersion, review.Kind = authorizationv1.SchemeGroupVersion.String(), "SelfSubjectAccessReview"
	s.respond(w, r, http.StatusCreated, review)
}

// validateAccessReviewSpec is upstream's check of a review's spec; subject
// says a user or group must be named (not for the self reviews).
func validateAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, subject bool) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	switch {
	case spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil:
		errs = append(errs, field.Invalid(p.Child("nonResourceAttributes"), spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	case spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil:
		errs = append(errs, field.Invalid(p.Child("resourceAttributes"), spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if subject && spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(p.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

func specUser(spec authorizationv1.SubjectAccessReviewSpec) authz.User {
	u := authz.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// reviewAccess asks the authorizers about user and the attributes.
func (s *Server) reviewAccess(ctx context.Context, user authz.User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := authz.Attributes{User: user}
	if res != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = res.Verb, res.Namespace, res.Group, res.Version
		a.Resource, a.Subresource, a.Name = res.Resource, res.Subresource, res.Name
		if res.FieldSelector != nil {
			a.FieldSelector = res.FieldSelector.RawSelector
		}
		if res.LabelSelector != nil {
			a.LabelSelector = res.LabelSelector.RawSelector
		}
	} else {
		a.Verb, a.Path = nonRes.Verb, nonRes.Path
	}
	d, reason, err := s.authz.chain.Authorize(ctx, a)
	status := authorizationv1.SubjectAccessReviewStatus{Allowed: d == authz.Allow, Denied: d == authz.Deny, Reason: reason}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// selfSubjectRulesReview lists what the caller may do in a namespace:
// everything for system:masters, otherwise the RBAC rules; a node's rules
// come from the Node authorizer and are not listed (incomplete), as
// upstream.
func (s *Server) selfSubjectRulesReview(w http.ResponseWriter, r *http.Request, info requestInfo) {
	review := &authorizationv1.SelfSubjectRulesReview{}
	gr := authorizationv1.Resource("selfsubjectrulesreviews")
	if err := s.readReview(r, review, "SelfSubjectRulesReview"); err != nil {
		s.respondError(w, r, err, gr, "")
		return
	}
	if review.Spec.Namespace == "" {
		s.respondError(w, r, apierrors.NewBadRequest("no namespace on request"), gr, "")
		return
	}
	user, _ := filters.UserFrom(r.Context())
	var rules []rbacv1.PolicyRule
	var status authorizationv1.SubjectRulesReviewStatus
	if user.InGroup(authz.SystemPrivilegedGroup) {
		rules = []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	}
	if _, isNode := authz.NodeName(user); isNode {
		status.Incomplete = true
		status.EvaluationError = "node authorizer does not support user rule resolution"
	}
	more, err := s.authz.rbac.RulesFor(user, review.Spec.Namespace)
	rules = append(rules, more...)
	if err != nil {
		status.Incomplete = true
		if status.EvaluationError != "" {
			status.EvaluationError += "; "
		}
		status.EvaluationError += err.Error()
	}
	status.ResourceRules, status.NonResourceRules = []authorizationv1.ResourceRule{}, []authorizationv1.NonResourceRule{}
	for _, rule := range rules {
		if len(rule.NonResourceURLs) > 0 {
			status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
			continue
		}
		status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{Verbs: rule.Verbs,
			APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames})
	}
	review.Status = status
	review.APIVersion, review.Kind = authorizationv1.SchemeGroupVersion.String(), "SelfSubjectRulesReview"
	s.respond(w, r, http.StatusCreated, review)
}
