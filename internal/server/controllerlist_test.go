package server

import (
	"net"
	"slices"
	"testing"

	"k8s.io/client-go/rest"

	"orch/internal/apiserver/authz"
	"orch/internal/controller"
	"orch/internal/controller/controllertest"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
)

// TestComponentsActAsTheirOwnIdentities: building the scheduler and every
// controller asks for one identity each — the scheduler's, or the
// controller's kube-system service account of the bootstrap policy — and
// none of them is in system:masters.
func TestComponentsActAsTheirOwnIdentities(t *testing.T) {
	env := controllertest.New(t)
	dir := t.TempDir()
	p := parsed{Config: Config{DataDir: dir}}
	_, p.clusterCIDR, _ = net.ParseCIDR("10.42.0.0/16")
	p.clusterCIDRs = []*net.IPNet{p.clusterCIDR}
	// The cluster CA (kube-root-ca.crt, the CSR signer's).
	if _, err := pki.Ensure(pki.Config{Dir: p.tlsDir(), Hostname: "server"}); err != nil {
		t.Fatal(err)
	}
	asked := map[string][]string{}
	as := func(user string, groups ...string) (controller.Context, error) {
		asked[user] = groups
		return env.Context, nil
	}
	components, err := controllers(p)(env.Context, as)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) < 2 || len(components) < len(rbacpolicy.ControllerServiceAccounts) {
		t.Fatalf("asked for %d identities for %d components", len(asked), len(components))
	}
	if _, ok := asked[rbacpolicy.SchedulerUser]; !ok {
		t.Errorf("the scheduler's identity was not asked for: %v", asked)
	}
	for user, groups := range asked {
		if slices.Contains(groups, authz.SystemPrivilegedGroup) {
			t.Errorf("%s is in system:masters", user)
		}
		if !rbacpolicy.IsComponent(user) {
			t.Errorf("%s is not an identity of the bootstrap policy", user)
		}
		if _, _, isSA := authz.SplitServiceAccount(user); isSA && !slices.Equal(groups, authz.ServiceAccountGroups("kube-system")) {
			t.Errorf("%s has groups %v, want the service account groups of kube-system", user, groups)
		}
	}
	for _, sa := range rbacpolicy.ControllerServiceAccounts {
		if _, ok := asked[rbacpolicy.ControllerUser(sa)]; !ok {
			t.Errorf("no controller acts as %s", sa)
		}
	}
}

// TestIdentitiesIssueOnlyTheirOwnGroups: the client certificate behind a
// component's configuration names its user and groups, nothing more.
func TestIdentitiesIssueOnlyTheirOwnGroups(t *testing.T) {
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "server"})
	if err != nil {
		t.Fatal(err)
	}
	ids := identities{loopback: &rest.Config{Host: "https://127.0.0.1:6443"}, bundle: bundle}
	cfg, err := ids.config(rbacpolicy.ControllerUser("deployment-controller"), authz.ServiceAccountGroups("kube-system")...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificatePEM(cfg.CertData)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:serviceaccount:kube-system:deployment-controller" ||
		!slices.Equal(cert.Subject.Organization, authz.ServiceAccountGroups("kube-system")) {
		t.Errorf("certificate subject = %v", cert.Subject)
	}
}
