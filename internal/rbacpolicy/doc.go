// Package rbacpolicy is orch's bootstrap RBAC policy and its reconciliation.
//
// The policy is what upstream Kubernetes' apiserver creates and reconciles
// at every start (the roles of plugin/pkg/auth/authorizer/rbac/bootstrappolicy:
// cluster-admin, admin/edit/view and their aggregate-to-* sources, the
// system:* roles of the components and their bindings, the system:controller:*
// roles of the controllers orch runs, and the namespaced roles of kube-system
// and kube-public), written here as orch's own Go data, plus the identities
// orch adds: its own controllers (nodepassword, clusterdns, servicelb,
// and crd, which upstream runs inside the apiserver), the
// agent's cluster DNS (system:orch-dns), the manifests applier
// (system:orch-manifests), the apiserver's client to the kubelets
// (system:kube-apiserver-kubelet-client) and the controller manager's
// leader-election Lease.
//
// Every object carries the label kubernetes.io/bootstrapping=rbac-defaults
// and the annotation rbac.authorization.kubernetes.io/autoupdate=true, as
// upstream's. Reconcile then behaves like upstream's apiserver: it creates
// what is missing, and on objects whose autoupdate annotation is not
// "false" it adds the rules, subjects, aggregation selectors, labels and
// annotations that are missing, never removing what a user added.
//
// Each controller runs as a service account of kube-system
// (ControllerServiceAccounts) bound to system:controller:NAME. The shared
// informers, events and leader election of the controller manager act as
// ControllerManagerUser, so a controller's role grants what the controller
// itself asks the apiserver (and what its own informers watch); where orch's
// controller does more than upstream's, the extra rule says why next to it.
//
//	if err := rbacpolicy.Reconcile(ctx, loopbackClient); err != nil { … }
//	sa := rbacpolicy.ControllerServiceAccounts["deployment"] // "deployment-controller"
package rbacpolicy
