package rbacpolicy_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"orch/internal/rbacpolicy"
)

// reconciled returns a fake cluster that holds the policy.
func reconciled(t *testing.T) *fake.Clientset {
	t.Helper()
	c := fake.NewClientset()
	if err := rbacpolicy.Reconcile(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	return c
}

func verbsOf(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// TestReconcileRereadsAfterAConflict: an object that changed since the list
// is read again from the apiserver and written on that version.
func TestReconcileRereadsAfterAConflict(t *testing.T) {
	c := reconciled(t)
	ctx := context.Background()
	basic, err := c.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	basic.Rules = basic.Rules[:1]
	if _, err := c.RbacV1().ClusterRoles().Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	c.PrependReactor("update", "clusterroles", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), "system:basic-user", nil)
	})
	c.ClearActions()
	if err := rbacpolicy.Reconcile(ctx, c); err != nil {
		t.Fatal(err)
	}
	var gets int
	for _, a := range c.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok && g.GetResource().Resource == "clusterroles" && g.GetName() == "system:basic-user" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("after the conflict system:basic-user was read %d times, want once: %v", gets, verbsOf(c.Actions()))
	}
	got, _ := c.RbacV1().ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if len(got.Rules) != 2 {
		t.Errorf("system:basic-user has %d rules after the retry, want 2: %v", len(got.Rules), got.Rules)
	}
}

// TestReconcileRecreatesABindingOfAnotherRole: a roleRef cannot change, so
// a binding that names another role is deleted and created again, as
// upstream does.
func TestReconcileRecreatesABindingOfAnotherRole(t *testing.T) {
	c := reconciled(t)
	ctx := context.Background()
	if err := c.RbacV1().ClusterRoleBindings().Delete(ctx, "system:discovery", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wrong := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:discovery", UID: "first"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, wrong, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	if err := rbacpolicy.Reconcile(ctx, c); err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, a := range c.Actions() {
		if a.GetVerb() != "list" {
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	if len(writes) != 2 || writes[0] != "delete clusterrolebindings" || writes[1] != "create clusterrolebindings" {
		t.Errorf("writes = %v, want the binding deleted and created", writes)
	}
	got, err := c.RbacV1().ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil || got.RoleRef.Name != "system:discovery" {
		t.Errorf("system:discovery binding = %v, %v; want it bound to system:discovery", got, err)
	}
}

// TestReconcileNamesWhatItCannotWrite: an error names the object, and the
// other objects are still reconciled.
func TestReconcileNamesWhatItCannotWrite(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "clusterroles", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*rbacv1.ClusterRole).Name == "system:heapster" {
			return true, nil, apierrors.NewForbidden(rbacv1.Resource("clusterroles"), "system:heapster", nil)
		}
		return false, nil, nil
	})
	err := rbacpolicy.Reconcile(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), `ClusterRole "system:heapster"`) {
		t.Fatalf("Reconcile = %v, want an error naming ClusterRole \"system:heapster\"", err)
	}
	if _, err := c.RbacV1().ClusterRoles().Get(context.Background(), "system:node", metav1.GetOptions{}); err != nil {
		t.Errorf("the other roles were not created: %v", err)
	}
}
