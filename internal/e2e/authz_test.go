package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/envtest"
	"orch/internal/join"
	"orch/internal/kubelet/images"
)

// kubectlRefused runs kubectl and fails the test unless it exits non-zero
// with want in its error output.
func (s *Server) kubectlRefused(t *testing.T, want string, c Cmd) {
	t.Helper()
	r := s.Run(t, c)
	if r.Code == 0 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("kubectl %s: exit %d\nstderr: %s\nwant a failure saying %q", strings.Join(c.Args, " "), r.Code, r.Stderr, want)
	}
}

// eventuallyKubectl waits until kubectl exits 0 (a new binding takes a
// moment to reach the authorizer) and returns its output.
func (s *Server) eventuallyKubectl(t *testing.T, c Cmd) string {
	t.Helper()
	var out string
	eventually(t, 30*time.Second, func() string {
		r := s.Run(t, c)
		if r.Code != 0 {
			return fmt.Sprintf("kubectl %s: exit %d: %s", strings.Join(c.Args, " "), r.Code, r.Stderr)
		}
		out = r.Stdout
		return ""
	})
	return out
}

// TestAuthorizationAsANewUser is issue 16's acceptance, tried with the real
// kubectl: the admin may do everything; a service account may do only what
// a binding gives it, in that namespace, through impersonation and with
// its own token alike, and can neither grant itself more nor impersonate;
// the kubelet API wants credentials and rights.
func TestAuthorizationAsANewUser(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	node := waitNodeReady(t, client, "e2e-server")

	if out := s.Kubectl(t, "auth", "can-i", "*", "*"); strings.TrimSpace(out) != "yes" {
		t.Errorf("admin: auth can-i '*' '*' = %q, want yes", out)
	}
	who := s.Kubectl(t, "auth", "whoami")
	if !strings.Contains(who, "system:admin") || !strings.Contains(who, "system:masters") {
		t.Errorf("admin: auth whoami = %q, want system:admin in system:masters", who)
	}

	s.Kubectl(t, "create", "namespace", "team")
	s.Kubectl(t, "create", "namespace", "other")
	s.Kubectl(t, "create", "serviceaccount", "app", "-n", "team")
	as := "--as=system:serviceaccount:team:app"
	s.kubectlRefused(t, `pods is forbidden: User "system:serviceaccount:team:app" cannot list resource "pods" in API group "" in the namespace "team"`,
		Cmd{Args: []string{as, "get", "pods", "-n", "team"}})

	s.Kubectl(t, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", "team")
	s.Kubectl(t, "create", "rolebinding", "app-reads-pods", "--role=pod-reader", "--serviceaccount=team:app", "-n", "team")
	s.eventuallyKubectl(t, Cmd{Args: []string{as, "get", "pods", "-n", "team"}})
	s.kubectlRefused(t, `cannot list resource "pods" in API group "" in the namespace "other"`, Cmd{Args: []string{as, "get", "pods", "-n", "other"}})
	s.kubectlRefused(t, `cannot list resource "secrets"`, Cmd{Args: []string{as, "get", "secrets", "-n", "team"}})
	if out := s.Kubectl(t, as, "auth", "can-i", "--list", "-n", "team"); !strings.Contains(out, "pods") {
		t.Errorf("auth can-i --list as the service account:\n%s\nwant its pods rule", out)
	}

	// It may create role bindings, but not one that grants what it lacks.
	s.Kubectl(t, "create", "role", "binder", "--verb=create", "--resource=rolebindings.rbac.authorization.k8s.io", "-n", "team")
	s.Kubectl(t, "create", "rolebinding", "app-binds", "--role=binder", "--serviceaccount=team:app", "-n", "team")
	eventually(t, 30*time.Second, func() string {
		r := s.Run(t, Cmd{Args: []string{as, "create", "rolebinding", "me-admin", "--clusterrole=cluster-admin", "--serviceaccount=team:app", "-n", "team"}})
		if r.Code == 0 {
			t.Fatal("the service account bound cluster-admin to itself")
		}
		if !strings.Contains(r.Stderr, "is attempting to grant RBAC permissions not currently held") {
			return "not yet refused for escalation: " + r.Stderr
		}
		return ""
	})

	// The same with its own token, over HTTPS.
	token := strings.TrimSpace(s.Kubectl(t, "create", "token", "app", "-n", "team"))
	cfg := rest.AnonymousClientConfig(s.RestConfig(t))
	cfg.BearerToken = token
	sa := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := sa.CoreV1().Pods("team").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pods in team with its token: %v", err)
	}
	if _, err := sa.CoreV1().Pods("other").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list pods in other with its token: err = %v, want Forbidden", err)
	}
	if _, err := sa.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets with its token: err = %v, want Forbidden", err)
	}
	imp := rest.CopyConfig(cfg)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "system:admin"}
	_, err := kubernetes.NewForConfigOrDie(imp).CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot impersonate resource "users"`) {
		t.Errorf("Impersonate-User with its token: err = %v, want Forbidden (impersonate)", err)
	}

	// The kubelet API: 401 without credentials, 403 without rights.
	kubelet := fmt.Sprintf("https://127.0.0.1:%d/pods", node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	anon := s.Anonymous(t)
	anon.c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	if r := anon.Do(t, "GET", kubelet, nil, nil); r.Code != http.StatusUnauthorized {
		t.Errorf("kubelet /pods without credentials: %s, want 401", r.describe())
	}
	if r := anon.Do(t, "GET", kubelet, nil, map[string]string{"Authorization": "Bearer " + token}); r.Code != http.StatusForbidden {
		t.Errorf("kubelet /pods with the service account's token: %s, want 403", r.describe())
	}
}

// TestNodeIdentity: a node reads only what its own pods use and writes only
// its own Node, whether impersonated or with its real kubeconfig, while its
// own pods keep running.
func TestNodeIdentity(t *testing.T) {
	s := StartServerWithAgent(t)
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")
	s.Kubectl(t, "create", "namespace", "team")
	s.Kubectl(t, "create", "secret", "generic", "mine", "-n", "team", "--from-literal=k=v1")
	s.Kubectl(t, "create", "secret", "generic", "theirs", "-n", "team", "--from-literal=k=v")
	pod := func(name, node, secret string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: team}
spec:
  nodeName: %s
  containers:
  - {name: c, image: %s, imagePullPolicy: Never, command: [sh, -c, "trap 'exit 0' TERM; sleep 3600 & wait"],
     volumeMounts: [{name: s, mountPath: /s}]}
  volumes: [{name: s, secret: {secretName: %s}}]
`, name, node, images.BusyboxRef, secret)
	}
	s.KubectlIn(t, pod("here", "e2e-server", "mine"), "apply", "-f", "-")
	s.KubectlIn(t, pod("there", "elsewhere", "theirs"), "apply", "-f", "-")
	s.KubectlIn(t, "apiVersion: v1\nkind: Node\nmetadata: {name: elsewhere}\n", "apply", "-f", "-")
	s.Kubectl(t, "wait", "--for=condition=Ready", "pod/here", "-n", "team", "--timeout=120s")

	asNode := []string{"--as=system:node:e2e-server", "--as-group=system:nodes"}
	realNode := []string{"KUBECONFIG=" + filepath.Join(s.Dir, "agent", "kubelet.kubeconfig")}
	for _, c := range []struct {
		env  []string
		args []string
	}{{nil, asNode}, {realNode, nil}} {
		run := func(args ...string) Cmd { return Cmd{Args: append(append([]string{}, c.args...), args...), Env: c.env} }
		s.eventuallyKubectl(t, run("get", "secret", "mine", "-n", "team"))
		s.kubectlRefused(t, "no relationship found between node 'e2e-server' and this object", run("get", "secret", "theirs", "-n", "team"))
		s.kubectlRefused(t, `cannot list resource "secrets"`, run("get", "secrets", "-n", "team"))
		s.kubectlRefused(t, "forbidden", run("label", "node", "elsewhere", "x=y"))
		s.kubectlRefused(t, "forbidden", run("label", "node", "e2e-server", "node-restriction.kubernetes.io/pool=a"))
		s.kubectlRefused(t, "forbidden", run("run", "sneaky", "-n", "team", "--image="+images.BusyboxRef))
		s.kubectlRefused(t, "forbidden", run("delete", "node", "elsewhere"))
		s.Kubectl(t, append(append([]string{}, c.args...), "get", "node", "e2e-server")...)
	}

	// The node keeps working under its identity: status reported, the
	// secret's update reaches the pod.
	s.KubectlIn(t, s.Kubectl(t, "create", "secret", "generic", "mine", "-n", "team", "--from-literal=k=v2", "--dry-run=client", "-o", "yaml"), "apply", "-f", "-")
	eventually(t, 3*time.Minute, func() string {
		r := s.Run(t, Cmd{Args: []string{"exec", "-n", "team", "here", "--", "cat", "/s/k"}})
		if r.Code != 0 || r.Stdout != "v2" {
			return "the pod sees " + strconv.Quote(r.Stdout) + " " + r.Stderr
		}
		return ""
	})
	n := waitNodeReady(t, client, "e2e-server")
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" && time.Since(c.LastHeartbeatTime.Time) > 2*time.Minute {
			t.Errorf("node status not reported lately: %v", c.LastHeartbeatTime)
		}
	}
}

// TestAgentTokenJoins: an agent joined with the agent token (not the
// server token) registers and runs like any other, and that token opens
// none of the server-only join endpoints.
func TestAgentTokenJoins(t *testing.T) {
	s := StartServer(t)
	data, err := os.ReadFile(filepath.Join(s.Dir, "server", "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(data))
	if !strings.Contains(token, "::node:") {
		t.Fatalf("agent token %q is not of the ::node: form", token)
	}
	args := append([]string{"--server", s.URL(), "--token", token, "--node-ip", agentIP, "--kubelet-port", strconv.Itoa(envtest.FreePort(t))}, testEvictionHard...)
	startAgent(t, "e2e-agent-token", nil, args)
	waitNodeReady(t, s.client(t), "e2e-agent-token")

	_, secret, _ := strings.Cut(token, "::node:")
	anon := s.Anonymous(t)
	for _, ep := range []struct{ method, path string }{{http.MethodGet, join.ServerBootstrapPath}, {http.MethodPost, join.EtcdMembersPath}} {
		for _, user := range []string{join.TokenUser, join.ServerUser} {
			req, _ := http.NewRequest(ep.method, s.URL()+ep.path, strings.NewReader("{}"))
			req.SetBasicAuth(user, secret)
			resp, err := anon.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s as %s with the agent token's secret: %d, want 401", ep.method, ep.path, user, resp.StatusCode)
			}
		}
	}
}
