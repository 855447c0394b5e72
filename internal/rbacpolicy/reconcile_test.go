package rbacpolicy_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch/internal/envtest"
	"orch/internal/rbacpolicy"
)

// requests counts what a client sends, by "METHOD path".
type requests struct {
	mu   sync.Mutex
	sent []string
}

func (c *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.sent = append(c.sent, req.Method+" "+req.URL.Path)
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// take returns what was sent since the last take.
func (c *requests) take() (reads, writes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sent {
		if len(s) > 4 && s[:4] == "GET " {
			reads = append(reads, s)
		} else {
			writes = append(writes, s)
		}
	}
	c.sent = nil
	return reads, writes
}

// TestReconcileAgainstTheAPIServer runs Reconcile against the real
// apiserver: it creates the policy, then writes nothing while nothing
// changed, then repairs what a user removed and keeps what a user added,
// and leaves alone what a user marked autoupdate "false".
func TestReconcileAgainstTheAPIServer(t *testing.T) {
	srv := envtest.Start(t)
	ctx := context.Background()
	counter := &requests{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(counter.wrap)
	client := kubernetes.NewForConfigOrDie(cfg)
	admin := kubernetes.NewForConfigOrDie(srv.Config)

	if err := rbacpolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("first Reconcile: %v", err)
	}
	holdsPolicy(t, admin)
	_, writes := counter.take()
	if want := len(rbacpolicy.ClusterRoles()) + len(rbacpolicy.ClusterRoleBindings()) + len(rbacpolicy.Roles()) + len(rbacpolicy.RoleBindings()); len(writes) < want {
		t.Errorf("first Reconcile sent %d writes, want at least one create per object (%d)", len(writes), want)
	}

	if err := rbacpolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	reads, writes := counter.take()
	if len(writes) != 0 {
		t.Errorf("second Reconcile wrote %v, want nothing", writes)
	}
	// One list of each cluster-scoped kind, one per namespace (default,
	// kube-system, kube-public) of the namespaced kinds.
	if len(reads) != 8 {
		t.Errorf("second Reconcile read %d times, want 8 lists: %v", len(reads), reads)
	}

	userEdits(t, admin)
	counter.take()
	if err := rbacpolicy.Reconcile(ctx, client); err != nil {
		t.Fatalf("Reconcile after the edits: %v", err)
	}
	_, writes = counter.take()
	wantWrites := []string{
		"PUT /apis/rbac.authorization.k8s.io/v1/clusterroles/system:basic-user",
		"POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		"PUT /apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/extension-apiserver-authentication-reader",
	}
	slices.Sort(writes)
	slices.Sort(wantWrites)
	if !slices.Equal(writes, wantWrites) {
		t.Errorf("Reconcile after the edits wrote %v, want %v", writes, wantWrites)
	}
	afterEdits(t, admin)
}

// holdsPolicy checks that every object of the policy exists with its rules,
// aggregation, roleRef and subjects.
func holdsPolicy(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, want := range rbacpolicy.ClusterRoles() {
		got, err := c.RbacV1().ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ClusterRole %s: %v", want.Name, err)
			continue
		}
		sameRules(t, "ClusterRole "+want.Name, got.Rules, want.Rules)
		if (want.AggregationRule == nil) != (got.AggregationRule == nil) {
			t.Errorf("ClusterRole %s: aggregationRule %v, want %v", want.Name, got.AggregationRule, want.AggregationRule)
		}
		marked(t, "ClusterRole "+want.Name, got.ObjectMeta)
	}
	for _, want := range rbacpolicy.Roles() {
		got, err := c.RbacV1().Roles(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Role %s/%s: %v", want.Namespace, want.Name, err)
			continue
		}
		sameRules(t, "Role "+want.Namespace+"/"+want.Name, got.Rules, want.Rules)
	}
	for _, want := range rbacpolicy.ClusterRoleBindings() {
		got, err := c.RbacV1().ClusterRoleBindings().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ClusterRoleBinding %s: %v", want.Name, err)
			continue
		}
		if got.RoleRef != want.RoleRef || !sameSubjects(got.Subjects, want.Subjects) {
			t.Errorf("ClusterRoleBinding %s: %v %v, want %v %v", want.Name, got.RoleRef, got.Subjects, want.RoleRef, want.Subjects)
		}
	}
	for _, want := range rbacpolicy.RoleBindings() {
		got, err := c.RbacV1().RoleBindings(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("RoleBinding %s/%s: %v", want.Namespace, want.Name, err)
			continue
		}
		if got.RoleRef != want.RoleRef || !sameSubjects(got.Subjects, want.Subjects) {
			t.Errorf("RoleBinding %s/%s: %v %v, want %v %v", want.Namespace, want.Name, got.RoleRef, got.Subjects, want.RoleRef, want.Subjects)
		}
	}
}

func sameRules(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	if ok, missing := validation.Covers(got, want); !ok {
		t.Errorf("%s lacks %v", what, missing)
	}
	if ok, extra := validation.Covers(want, got); !ok {
		t.Errorf("%s has more than the policy: %v", what, extra)
	}
}

func sameSubjects(a, b []rbacv1.Subject) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s rbacv1.Subject) bool { return !slices.Contains(b, s) })
}

func marked(t *testing.T, what string, m metav1.ObjectMeta) {
	t.Helper()
	if m.Labels[rbacpolicy.BootstrappingLabel] != rbacpolicy.BootstrappingValue || m.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("%s: labels %v, annotations %v; want upstream's bootstrapping label and autoupdate annotation", what, m.Labels, m.Annotations)
	}
}

// The edits a user makes between two reconciles.
var (
	extraViewRule   = rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get"}}
	extraSubject    = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	protectedURLs   = []string{"/version"}
	userLabel       = "example.com/team"
	authReaderRole  = "extension-apiserver-authentication-reader"
	protectedRole   = "system:discovery"
	basicUserRole   = "system:basic-user"
	clusterAdminCRB = "cluster-admin"
)

func userEdits(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	roles := c.RbacV1().ClusterRoles()
	// An extra rule on the aggregated view (what the aggregation does too).
	envtest.Update(t, "view", roles.Get, roles.Update, func(r *rbacv1.ClusterRole) { r.Rules = append(r.Rules, extraViewRule) })
	// A rule of system:basic-user removed, and a label of the user's.
	envtest.Update(t, basicUserRole, roles.Get, roles.Update, func(r *rbacv1.ClusterRole) {
		r.Rules = r.Rules[:1]
		r.Labels[userLabel] = "a"
	})
	// system:discovery opted out of reconciliation, then narrowed.
	envtest.Update(t, protectedRole, roles.Get, roles.Update, func(r *rbacv1.ClusterRole) {
		r.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		r.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: protectedURLs}}
	})
	// A subject added to a binding, and a binding deleted.
	envtest.Update(t, basicUserRole, c.RbacV1().ClusterRoleBindings().Get, c.RbacV1().ClusterRoleBindings().Update, func(b *rbacv1.ClusterRoleBinding) {
		b.Subjects = append(b.Subjects, extraSubject)
	})
	if err := c.RbacV1().ClusterRoleBindings().Delete(context.Background(), clusterAdminCRB, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A namespaced role emptied.
	envtest.Update(t, authReaderRole, c.RbacV1().Roles(metav1.NamespaceSystem).Get, c.RbacV1().Roles(metav1.NamespaceSystem).Update, func(r *rbacv1.Role) { r.Rules = nil })
}

func afterEdits(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	want := map[string]rbacv1.ClusterRole{}
	for _, r := range rbacpolicy.ClusterRoles() {
		want[r.Name] = r
	}
	view := envtest.Get(t, c.RbacV1().ClusterRoles().Get, "view")
	if ok, _ := validation.Covers(view.Rules, []rbacv1.PolicyRule{extraViewRule}); !ok {
		t.Errorf("view lost the rule a user added: %v", view.Rules)
	}
	basic := envtest.Get(t, c.RbacV1().ClusterRoles().Get, basicUserRole)
	sameRules(t, basicUserRole, basic.Rules, want[basicUserRole].Rules)
	if basic.Labels[userLabel] != "a" {
		t.Errorf("%s lost the user's label: %v", basicUserRole, basic.Labels)
	}
	discovery := envtest.Get(t, c.RbacV1().ClusterRoles().Get, protectedRole)
	if discovery.Annotations[rbacv1.AutoUpdateAnnotationKey] != "false" || len(discovery.Rules) != 1 ||
		!slices.Equal(discovery.Rules[0].NonResourceURLs, protectedURLs) {
		t.Errorf("%s with autoupdate \"false\" was changed: %v %v", protectedRole, discovery.Annotations, discovery.Rules)
	}
	binding := envtest.Get(t, c.RbacV1().ClusterRoleBindings().Get, basicUserRole)
	if !slices.Contains(binding.Subjects, extraSubject) {
		t.Errorf("%s binding lost the subject a user added: %v", basicUserRole, binding.Subjects)
	}
	admin, err := c.RbacV1().ClusterRoleBindings().Get(ctx, clusterAdminCRB, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the deleted %s binding did not come back: %v", clusterAdminCRB, err)
	}
	if len(admin.Subjects) != 1 || admin.Subjects[0].Name != "system:masters" || admin.RoleRef.Name != "cluster-admin" {
		t.Errorf("%s binding came back as %v %v", clusterAdminCRB, admin.RoleRef, admin.Subjects)
	}
	reader := envtest.Get(t, c.RbacV1().Roles(metav1.NamespaceSystem).Get, authReaderRole)
	if len(reader.Rules) == 0 {
		t.Errorf("the emptied Role kube-system/%s did not get its rule back", authReaderRole)
	}
}
