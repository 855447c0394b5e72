package bench

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The user the API phases run as under ORCH_BENCH_AS=rbac.
const (
	benchUser  = "bench-user"
	benchGroup = "bench"
)

// benchRoles are the bootstrap ClusterRoles whose union is the aggregated
// role edit. The group is bound to them rather than to edit because edit's
// rules are filled in by the ClusterRole aggregation controller, which orch
// runs but a bare kube-apiserver (no kube-controller-manager) does not: there
// edit has no rules.
var benchRoles = []string{"system:aggregate-to-edit", "system:aggregate-to-view"}

// widgetsRole lets benchGroup use the bench's custom resource, which the
// edit role covers only through aggregation (a ClusterRole of the CRD's
// author labelled aggregate-to-edit), and so not here.
var widgetsRole = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "bench-widgets"},
	Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{widgetsGVR.Group},
		Resources: []string{widgetsGVR.Resource},
		Verbs:     []string{"get", "list", "watch", "create", "update"},
	}},
}

// benchAs is ORCH_BENCH_AS: "rbac" runs the API phases as a user that RBAC
// authorizes instead of as the admin, whom no authorizer is asked about.
var benchAs = os.Getenv("ORCH_BENCH_AS")

// identity names who the API phases run as, for the report.
func identity() string {
	if benchAs == "rbac" {
		return fmt.Sprintf("%s (group %s; RBAC: %s, the rules of edit, and %s)", benchUser, benchGroup, strings.Join(benchRoles, " + "), widgetsRole.Name)
	}
	return "admin (group system:masters, which skips authorization)"
}

// mastersUserConfig is a client configuration for user name in group
// system:masters (whom no authorizer is asked about, as the admin), with a
// client certificate signed by the CA in t.caDir.
func mastersUserConfig(t *target, name string) (*rest.Config, error) {
	return certUserConfig(t, name, "system:masters")
}

// certUserConfig is a client configuration for user name in group, with a
// client certificate signed by the CA in t.caDir.
func certUserConfig(t *target, name, group string) (*rest.Config, error) {
	ca, caKey, err := loadCA(t.caDir)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := issueCert(ca, caKey, 4, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{group}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	config := rest.AnonymousClientConfig(t.config)
	config.CertData, config.KeyData = certPEM, keyPEM
	return config, nil
}

// rbacUserConfig binds benchGroup to benchRoles and widgetsRole with the
// admin client, signs a client certificate for benchUser in benchGroup with
// the CA in t.caDir, and returns a client configuration for it once
// SelfSubjectAccessReviews say the user may read and write configmaps and
// create widgets (authorizers learn of new bindings from a watch, a moment
// later).
func rbacUserConfig(t *target) (*rest.Config, error) {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(t.config)
	if err != nil {
		return nil, err
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, widgetsRole, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create ClusterRole %s: %w", widgetsRole.Name, err)
	}
	bindings := map[string]string{widgetsRole.Name: widgetsRole.Name} // binding name → role
	for _, role := range benchRoles {
		bindings["bench-"+strings.TrimPrefix(role, "system:aggregate-to-")] = role
	}
	for name, role := range bindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: benchGroup}},
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create ClusterRoleBinding %s: %w", crb.Name, err)
		}
	}
	config, err := certUserConfig(t, benchUser, benchGroup)
	if err != nil {
		return nil, err
	}
	user, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	checks := []authorizationv1.ResourceAttributes{ // one from each role
		{Namespace: nsCreate, Verb: "create", Resource: "configmaps"},
		{Namespace: nsCreate, Verb: "list", Resource: "configmaps"},
		{Namespace: nsCreate, Verb: "create", Group: widgetsGVR.Group, Resource: widgetsGVR.Resource},
	}
	allowed := func(ctx context.Context) (bool, error) {
		for _, attrs := range checks {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
			got, err := user.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, allowed); err != nil {
		return nil, fmt.Errorf("wait for %s to be allowed configmaps create and list and widgets create: %w", benchUser, err)
	}
	return config, nil
}
