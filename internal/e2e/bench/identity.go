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

// benchAs is ORCH_BENCH_AS: "rbac" runs the API phases as a user that RBAC
// authorizes instead of as the admin, whom no authorizer is asked about.
var benchAs = os.Getenv("ORCH_BENCH_AS")

// identity names who the API phases run as, for the report.
func identity() string {
	if benchAs == "rbac" {
		return fmt.Sprintf("%s (group %s; RBAC: %s, the rules of edit)", benchUser, benchGroup, strings.Join(benchRoles, " + "))
	}
	return "admin (group system:masters, which skips authorization)"
}

// rbacUserConfig binds benchGroup to benchRoles with the admin client, signs
// a client certificate for benchUser in benchGroup with the CA in t.caDir,
// and returns a client configuration for it once a SelfSubjectAccessReview
// says the user may read and write configmaps (authorizers learn of new
// bindings from a watch, a moment later).
func rbacUserConfig(t *target) (*rest.Config, error) {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(t.config)
	if err != nil {
		return nil, err
	}
	for _, role := range benchRoles {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-" + strings.TrimPrefix(role, "system:aggregate-to-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: benchGroup}},
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create ClusterRoleBinding %s: %w", crb.Name, err)
		}
	}
	ca, caKey, err := loadCA(t.caDir)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := issueCert(ca, caKey, 4, &x509.Certificate{
		Subject:     pkix.Name{CommonName: benchUser, Organization: []string{benchGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	config := rest.AnonymousClientConfig(t.config)
	config.CertData, config.KeyData = certPEM, keyPEM
	user, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	allowed := func(ctx context.Context) (bool, error) {
		for _, verb := range []string{"create", "list"} { // one from each role
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: nsCreate, Verb: verb, Resource: "configmaps"},
			}}
			got, err := user.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, allowed); err != nil {
		return nil, fmt.Errorf("wait for %s to be allowed configmaps create and list: %w", benchUser, err)
	}
	return config, nil
}
