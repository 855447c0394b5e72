package apiserver_test

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/envtest"
)

// authzEnv is an apiserver with the bootstrap policy, namespaces one and
// two, and an admin client.
type authzEnv struct {
	t     *testing.T
	srv   *envtest.Server
	admin kubernetes.Interface
}

func newAuthzEnv(t *testing.T) *authzEnv {
	t.Helper()
	srv := envtest.StartWith(t, envtest.Options{RBAC: true})
	e := &authzEnv{t: t, srv: srv, admin: kubernetes.NewForConfigOrDie(srv.Config)}
	for _, ns := range []string{"one", "two"} {
		if _, err := e.admin.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// as is a client acting as user in groups (and system:authenticated).
func (e *authzEnv) as(user string, groups ...string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(e.srv.ConfigAs(user, groups...))
}

func (e *authzEnv) asServiceAccount(ns, name string) kubernetes.Interface {
	return e.as("system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
}

// grant gives subject the rules in namespace through a Role and a RoleBinding
// named name, and waits until the authorizer has them.
func (e *authzEnv) grant(ns, name string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{subject},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := e.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// eventuallyAllowed waits until call stops being Forbidden (the authorizer
// follows the watch cache) and fails on any other error.
func eventuallyAllowed(t *testing.T, what string, call func() error) {
	t.Helper()
	envtest.Eventually(t, what, func() (bool, error) {
		err := call()
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
}

func wantForbidden(t *testing.T, err error, message string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if message != "" && err.Error() != message {
		t.Fatalf("message = %q\nwant      %q", err.Error(), message)
	}
}

func TestServiceAccountNeedsABinding(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	sa := e.asServiceAccount("one", "app")
	_, err := sa.CoreV1().Pods("one").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `pods is forbidden: User "system:serviceaccount:one:app" cannot list resource "pods" in API group "" in the namespace "one"`)

	e.grant("one", "pod-reader", rbacv1.Subject{Kind: "ServiceAccount", Name: "app", Namespace: "one"},
		rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}})
	eventuallyAllowed(t, "the service account to list pods", func() error {
		_, err := sa.CoreV1().Pods("one").List(ctx, metav1.ListOptions{})
		return err
	})
	_, err = sa.CoreV1().Pods("two").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `pods is forbidden: User "system:serviceaccount:one:app" cannot list resource "pods" in API group "" in the namespace "two"`)
	_, err = sa.CoreV1().Secrets("one").Get(ctx, "x", metav1.GetOptions{})
	wantForbidden(t, err, `secrets "x" is forbidden: User "system:serviceaccount:one:app" cannot get resource "secrets" in API group "" in the namespace "one"`)
	_, err = sa.CoreV1().Pods("one").Watch(ctx, metav1.ListOptions{})
	wantForbidden(t, err, "")
}

func TestResourceNamesAllowListOfThatName(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	for _, name := range []string{"mine", "other"} {
		if _, err := e.admin.CoreV1().ConfigMaps("one").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.grant("one", "mine", rbacv1.Subject{Kind: "User", Name: "bob"},
		rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"mine"}},
		rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"namespaces"}})
	bob := e.as("bob")
	eventuallyAllowed(t, "bob to get his config map", func() error {
		_, err := bob.CoreV1().ConfigMaps("one").Get(ctx, "mine", metav1.GetOptions{})
		return err
	})
	one := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "mine").String()}
	if list, err := bob.CoreV1().ConfigMaps("one").List(ctx, one); err != nil || len(list.Items) != 1 {
		t.Fatalf("list of one name: %v, %v", list, err)
	}
	_, err := bob.CoreV1().ConfigMaps("one").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, "")
	_, err = bob.CoreV1().ConfigMaps("one").Get(ctx, "other", metav1.GetOptions{})
	wantForbidden(t, err, "")
	// A RoleBinding in a namespace can grant reading that namespace only.
	if _, err := bob.CoreV1().Namespaces().Get(ctx, "one", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace one: %v", err)
	}
	_, err = bob.CoreV1().Namespaces().Get(ctx, "two", metav1.GetOptions{})
	wantForbidden(t, err, `namespaces "two" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "two"`)
}

func TestNonResourcePaths(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	bob := e.as("bob")
	if _, err := bob.Discovery().ServerVersion(); err != nil {
		t.Fatalf("/version as an authenticated user: %v", err)
	}
	if _, err := bob.Discovery().ServerGroups(); err != nil {
		t.Fatalf("discovery as an authenticated user: %v", err)
	}
	err := bob.CoreV1().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error()
	wantForbidden(t, err, `forbidden: User "bob" cannot get path "/metrics"`)

	// Profiles (--profiling) are for those allowed /debug/pprof/*.
	err = bob.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Do(ctx).Error()
	wantForbidden(t, err, `forbidden: User "bob" cannot get path "/debug/pprof/heap"`)
	heap, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").DoRaw(ctx)
	if err != nil || len(heap) < 2 || heap[0] != 0x1f || heap[1] != 0x8b {
		t.Fatalf("heap profile as admin: %d bytes (want a gzipped profile), %v", len(heap), err)
	}
	goroutines, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/goroutine").Param("debug", "1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(goroutines), "goroutine profile: total") {
		t.Fatalf("goroutine profile as admin: %.200q, %v", goroutines, err)
	}
}

func TestEscalationPrevention(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	// Alice may manage roles and bindings in one and read pods there, nothing more.
	e.grant("one", "rbac-manager", rbacv1.Subject{Kind: "User", Name: "alice"},
		rbacv1.PolicyRule{Verbs: []string{"get", "list", "create", "update", "delete"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
		rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}})
	alice := e.as("alice")
	eventuallyAllowed(t, "alice to list roles", func() error {
		_, err := alice.RbacV1().Roles("one").List(ctx, metav1.ListOptions{})
		return err
	})

	// She may hand out what she has...
	held := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := alice.RbacV1().Roles("one").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a role within her rights: %v", err)
	}
	// ...but not more.
	more := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}
	_, err := alice.RbacV1().Roles("one").Create(ctx, more, metav1.CreateOptions{})
	wantForbidden(t, err, "")
	if !strings.Contains(err.Error(), `user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) ||
		!strings.Contains(err.Error(), `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`) {
		t.Fatalf("message = %q", err.Error())
	}
	admin := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "me-admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	_, err = alice.RbacV1().RoleBindings("one").Create(ctx, admin, metav1.CreateOptions{})
	wantForbidden(t, err, "")

	// With bind on cluster-admin she may bind it (in her namespace).
	e.grant("one", "binder", rbacv1.Subject{Kind: "User", Name: "alice"},
		rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}})
	eventuallyAllowed(t, "alice to bind cluster-admin", func() error {
		_, err := alice.RbacV1().RoleBindings("one").Create(ctx, admin, metav1.CreateOptions{})
		return err
	})
	// With escalate on roles she may write any role.
	e.grant("one", "escalator", rbacv1.Subject{Kind: "User", Name: "carol"},
		rbacv1.PolicyRule{Verbs: []string{"create", "escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}})
	eventuallyAllowed(t, "carol to escalate", func() error {
		_, err := e.as("carol").RbacV1().Roles("one").Create(ctx, more, metav1.CreateOptions{})
		return err
	})
}

func TestImpersonationNeedsTheVerb(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	if _, err := e.admin.CoreV1().ServiceAccounts("one").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := e.admin.CoreV1().ServiceAccounts("one").CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.srv.Config)
	cfg.BearerToken = tr.Status.Token
	whoami, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || whoami.Status.UserInfo.Username != "system:serviceaccount:one:app" {
		t.Fatalf("whoami with the token: %v, %v", whoami, err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "admin"}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("one").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `users "admin" is forbidden: User "system:serviceaccount:one:app" cannot impersonate resource "users" in API group "" at the cluster scope`)

	// The admin may impersonate; the impersonated user is who whoami shows.
	as := e.as("dave", "devs")
	whoami, err = as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := whoami.Status.UserInfo; u.Username != "dave" || strings.Join(u.Groups, ",") != "devs,system:authenticated" {
		t.Fatalf("whoami as dave = %+v", u)
	}
}

func TestAccessReviews(t *testing.T) {
	e := newAuthzEnv(t)
	ctx := context.Background()
	e.grant("one", "reader", rbacv1.Subject{Kind: "Group", Name: "readers"},
		rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}})
	listPods := &authorizationv1.ResourceAttributes{Namespace: "one", Verb: "list", Resource: "pods"}

	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "erin", Groups: []string{"readers"}, ResourceAttributes: listPods}}
	envtest.Eventually(t, "a SubjectAccessReview to allow erin", func() (bool, error) {
		got, err := e.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, err
	})
	sar.Spec.Groups = nil
	got, err := e.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil || got.Status.Allowed {
		t.Fatalf("erin outside readers: %+v, %v", got.Status, err)
	}
	sar.Spec.User = ""
	if _, err := e.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("no user nor group: err = %v, want Invalid", err)
	}

	lsar := &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"readers"}, ResourceAttributes: listPods}}
	if got, err := e.admin.AuthorizationV1().LocalSubjectAccessReviews("one").Create(ctx, lsar, metav1.CreateOptions{}); err != nil || !got.Status.Allowed || got.Namespace != "one" {
		t.Fatalf("local review: %+v, %v", got, err)
	}
	lsar.Namespace = "one" // may be given, as the conformance test does
	if got, err := e.admin.AuthorizationV1().LocalSubjectAccessReviews("one").Create(ctx, lsar, metav1.CreateOptions{}); err != nil || !got.Status.Allowed {
		t.Fatalf("local review naming its namespace: %+v, %v", got, err)
	}
	lsar.Namespace = ""
	if _, err := e.admin.AuthorizationV1().LocalSubjectAccessReviews("two").Create(ctx, lsar, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("local review in another namespace: err = %v, want BadRequest", err)
	}

	// A user with no rights may still ask about itself (system:basic-user).
	erin := e.as("erin", "readers")
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: listPods}}
	if got, err := erin.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{}); err != nil || !got.Status.Allowed {
		t.Fatalf("self review: %+v, %v", got, err)
	}
	ssrr := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "one"}}
	rules, err := erin.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, ssrr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rules.Status.ResourceRules {
		if strings.Join(r.Verbs, ",") == "list" && strings.Join(r.Resources, ",") == "pods" {
			found = true
		}
	}
	if !found || rules.Status.Incomplete {
		t.Fatalf("rules review = %+v, want list pods, complete", rules.Status)
	}
	// Only those with create on subjectaccessreviews may ask about others.
	_, err = erin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	wantForbidden(t, err, "")
}
