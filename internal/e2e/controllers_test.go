package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNamespaceLifecycle: a new namespace gets its default ServiceAccount, and
// `kubectl delete namespace` returns once everything in it is gone and the
// namespace with it (the namespace controller finalizes it).
func TestNamespaceLifecycle(t *testing.T) {
	s := StartServer(t)
	s.Kubectl(t, "create", "namespace", "doomed")
	eventually(t, 30*time.Second, func() string {
		r := s.Run(t, Cmd{Args: []string{"-n", "doomed", "get", "serviceaccount", "default", "-o", "name"}})
		if r.Code == 0 && strings.TrimSpace(r.Stdout) == "serviceaccount/default" {
			return ""
		}
		return "no default ServiceAccount yet: " + r.Stderr
	})
	s.Kubectl(t, "-n", "doomed", "create", "configmap", "a", "--from-literal=k=v")
	s.Kubectl(t, "-n", "doomed", "create", "secret", "generic", "b", "--from-literal=k=v")
	out := s.Kubectl(t, "delete", "namespace", "doomed", "--timeout=60s")
	if !strings.Contains(out, `namespace "doomed" deleted`) {
		t.Fatalf("delete namespace printed %q", out)
	}
	r := s.Run(t, Cmd{Args: []string{"get", "namespace", "doomed"}})
	if r.Code == 0 || !strings.Contains(r.Stderr, "NotFound") {
		t.Fatalf("after delete: exit %d, %q %q; want NotFound", r.Code, r.Stdout, r.Stderr)
	}
}
