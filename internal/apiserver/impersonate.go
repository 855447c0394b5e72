package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/apiserver/authz"
)

// The impersonation headers kubectl --as, --as-group and --as-uid send.
const (
	impersonateUser        = "Impersonate-User"
	impersonateUID         = "Impersonate-Uid"
	impersonateGroup       = "Impersonate-Group"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

// impersonate returns the user r acts as: user itself without
// impersonation headers, otherwise the impersonated user, once user may
// impersonate each part of it (the impersonate verb on users or
// serviceaccounts, groups, uids and userextras), as upstream's filter does.
// The headers are removed from r; impersonated says whether there were any.
func (s *Server) impersonate(ctx context.Context, r *http.Request, user authz.User) (authz.User, bool, error) {
	name := r.Header.Get(impersonateUser)
	uid := r.Header.Get(impersonateUID)
	groups := r.Header.Values(impersonateGroup)
	extra := map[string][]string{}
	for key, values := range r.Header {
		if k, ok := strings.CutPrefix(key, impersonateExtraPrefix); ok {
			decoded, err := url.PathUnescape(k)
			if err != nil {
				return user, false, apierrors.NewBadRequest(fmt.Sprintf("the header %s%s is not a valid escaped extra key", impersonateExtraPrefix, k))
			}
			extra[strings.ToLower(decoded)] = values
		}
	}
	if name == "" && uid == "" && len(groups) == 0 && len(extra) == 0 {
		return user, false, nil
	}
	if name == "" {
		return user, false, apierrors.NewBadRequest("requested impersonation of groups, uid or extra without impersonating a user")
	}
	check := func(a authz.Attributes) error {
		a.User, a.Verb, a.ResourceRequest = user, "impersonate", true
		d, reason, _ := s.authz.chain.Authorize(ctx, a)
		if d != authz.Allow {
			return forbidden(a, reason)
		}
		return nil
	}
	out := authz.User{Name: name, UID: uid}
	if ns, sa, ok := authz.SplitServiceAccount(name); ok {
		if err := check(authz.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa}); err != nil {
			return user, false, err
		}
		if len(groups) == 0 {
			out.Groups = authz.ServiceAccountGroups(ns)
		}
	} else if err := check(authz.Attributes{Resource: "users", Name: name}); err != nil {
		return user, false, err
	}
	for _, g := range groups {
		if err := check(authz.Attributes{Resource: "groups", Name: g}); err != nil {
			return user, false, err
		}
		out.Groups = append(out.Groups, g)
	}
	if uid != "" {
		if err := check(authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid}); err != nil {
			return user, false, err
		}
	}
	for key, values := range extra {
		for _, v := range values {
			if err := check(authz.Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: key, Name: v}); err != nil {
				return user, false, err
			}
		}
		if out.Extra == nil {
			out.Extra = map[string][]string{}
		}
		out.Extra[key] = values
	}
	switch {
	case name == authz.Anonymous:
		if !slices.Contains(out.Groups, authz.UnauthenticatedGroup) {
			out.Groups = append(out.Groups, authz.UnauthenticatedGroup)
		}
	case !slices.Contains(out.Groups, authz.AuthenticatedGroup):
		out.Groups = append(out.Groups, authz.AuthenticatedGroup)
	}
	for key := range r.Header {
		if key == impersonateUser || key == impersonateUID || key == impersonateGroup || strings.HasPrefix(key, impersonateExtraPrefix) {
			r.Header.Del(key)
		}
	}
	return out, true, nil
}
