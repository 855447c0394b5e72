package apiserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
	"orch/internal/envtest"
)

// BenchmarkAuthorizedGet is the cost of authorization on a get served by
// the apiserver in process (no TLS, no client): as system:masters, which
// no authorizer is asked about, and as a user RBAC allows through a
// ClusterRoleBinding of the bootstrap policy's edit parts, among the
// bootstrap policy's bindings.
func BenchmarkAuthorizedGet(b *testing.B) {
	srv := envtest.StartWith(b, envtest.Options{RBAC: true})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, role := range []string{"system:aggregate-to-edit", "system:aggregate-to-view"} {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "bench"}}}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	users := map[string]authz.User{
		"masters": {Name: "admin", Groups: []string{"system:masters", "system:authenticated"}},
		"rbac":    {Name: "bench-user", Groups: []string{"bench", "system:authenticated"}},
	}
	get := func(b *testing.B, u authz.User) int {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/bench/configmaps/x", nil).WithContext(filters.WithUser(ctx, u))
		w := httptest.NewRecorder()
		srv.API.ServeHTTP(w, req)
		return w.Code
	}
	envtest.EventuallyTrue(b, "the binding to reach the authorizer", func() bool { return get(b, users["rbac"]) == http.StatusOK })
	for _, name := range []string{"masters", "rbac"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := get(b, users[name]); code != http.StatusOK {
					b.Fatalf("get as %s: %d", name, code)
				}
			}
		})
	}
}
