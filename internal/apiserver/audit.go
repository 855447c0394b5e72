package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"

	"orch/internal/apiserver/authz"
)

// The audit log (filters.Audit) records what the handlers tell it here:
// the objects of Request and RequestResponse level events, the user a
// request impersonates, and the authorization decision. Each is a no-op
// for a request that is not audited.

func auditing(ctx context.Context) bool {
	ac := audit.AuditContextFrom(ctx)
	return ac != nil && ac.Enabled()
}

// auditRequestObject logs the object a write sends.
func (s *Server) auditRequestObject(ctx context.Context, rs *resourceStore, obj runtime.Object) {
	if auditing(ctx) {
		audit.LogRequestObject(ctx, obj, rs.gvk.GroupVersion(), rs.gvk.GroupVersion().WithResource(rs.gr.Resource), "", s.codecs.factory)
	}
}

// auditResponseObject logs what a request answers (a Status alone below
// the RequestResponse level).
func (s *Server) auditResponseObject(ctx context.Context, obj runtime.Object) {
	if auditing(ctx) {
		audit.LogResponseObject(ctx, obj, obj.GetObjectKind().GroupVersionKind().GroupVersion(), s.codecs.factory)
	}
}

// auditImpersonation records the user a request acts as.
func auditImpersonation(ctx context.Context, u authz.User) {
	if auditing(ctx) {
		audit.LogImpersonatedUser(ctx, &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}, "")
	}
}

// auditDecision records the authorizer's decision, with upstream's
// annotation keys.
func auditDecision(ctx context.Context, allowed bool, reason string) {
	if !auditing(ctx) {
		return
	}
	decision := "forbid"
	if allowed {
		decision = "allow"
	}
	audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", decision, "authorization.k8s.io/reason", reason)
}
