// Package rbac is orch's RBAC authorizer: it holds Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings in memory, fed object by object by
// the apiserver's watch caches, and answers requests as upstream's RBAC
// authorizer does (Allow or NoOpinion, never Deny, with upstream's reasons).
// It also resolves the rules a user holds, for the apiserver's escalation
// checks on roles and bindings (ConfirmNoEscalation).
//
// Objects passed to Update are kept, not copied: like objects in an
// informer cache, they must not be modified afterwards.
//
// ClusterRole aggregation is not done here: the aggregation controller
// writes the aggregated rules into the ClusterRole, and the authorizer uses
// its Rules as they are.
//
// The apiserver feeds it from its watch caches and asks it on every
// request that the privileged group and the Node authorizer leave open:
//
//	a := rbac.New()
//	a.Update(clusterRole)        // add or replace, on each watch event
//	a.Delete(oldBinding)         // on deletion
//	d, reason, _ := a.Authorize(ctx, attrs)
//
// Requests are answered under a read lock without allocating: bindings
// are prepared when they arrive (each subject reduced to the user or group
// name to compare, the reason already worded).
package rbac
