package rbac_test

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/authz/rbac"
)

func Example() {
	a := rbac.New()
	a.Update(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
	})
	a.Update(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "read-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app"}}, // namespace web
	})
	app := authz.User{Name: authz.ServiceAccountUser("web", "app"), Groups: authz.ServiceAccountGroups("web")}

	for _, namespace := range []string{"web", "db"} {
		d, reason, _ := a.Authorize(context.Background(), authz.Attributes{
			User: app, Verb: "list", ResourceRequest: true, Namespace: namespace, Resource: "pods",
		})
		fmt.Printf("%s: %v %q\n", namespace, d, reason)
	}
	err := a.ConfirmNoEscalation(app, "web", []rbacv1.PolicyRule{
		{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}},
	})
	fmt.Println(err)
	// Output:
	// web: allow "RBAC: allowed by RoleBinding \"read-pods/web\" of ClusterRole \"pod-reader\" to ServiceAccount \"app/web\""
	// db: no opinion ""
	// user "system:serviceaccount:web:app" (groups=["system:serviceaccounts" "system:serviceaccounts:web"]) is attempting to grant RBAC permissions not currently held:
	// {APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
}
