package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServerSideApply: `kubectl apply --server-side` creates, re-applies
// without a write, reports a conflict with another manager, and with
// --force-conflicts takes the field over, recording managedFields as
// upstream does.
func TestServerSideApply(t *testing.T) {
	s := StartServer(t)
	file := writeFile(t, "ssa.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n  a: \"1\"\n")
	get := func(expr string) string {
		t.Helper()
		return s.Kubectl(t, "get", "cm", "ssa", "-n", "default", "-o", "jsonpath="+expr)
	}

	expectLines(t, s.Kubectl(t, "apply", "--server-side", "-f", file), "configmap/ssa serverside-applied")
	expectManagers(t, s, "after the first apply", "kubectl Apply")
	rv := get("{.metadata.resourceVersion}")
	expectLines(t, s.Kubectl(t, "apply", "--server-side", "-f", file), "configmap/ssa serverside-applied")
	if got := get("{.metadata.resourceVersion}"); got != rv {
		t.Errorf("applying the same configuration again wrote the object: resourceVersion %s -> %s", rv, got)
	}

	s.Kubectl(t, "patch", "cm", "ssa", "-n", "default", "--type", "merge", "-p", `{"data":{"a":"2"}}`)
	expectManagers(t, s, "after kubectl patch changed the applied field", "kubectl-patch Update")
	r := s.Run(t, Cmd{Args: []string{"apply", "--server-side", "-f", file}})
	if r.Code == 0 || !strings.Contains(r.Stderr, `Apply failed with 1 conflict: conflict with "kubectl-patch"`) || !strings.Contains(r.Stderr, ".data.a") {
		t.Errorf("apply over another manager's field: exit %d %q, want a conflict on .data.a", r.Code, r.Stderr)
	}
	if got := get("{.data.a}"); got != "2" {
		t.Errorf("a conflicting apply changed the object: a=%s", got)
	}

	expectLines(t, s.Kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", file), "configmap/ssa serverside-applied")
	if got := get("{.data.a}"); got != "1" {
		t.Errorf("after --force-conflicts: a=%s, want 1", got)
	}
	expectManagers(t, s, "after --force-conflicts", "kubectl Apply")
}

// expectManagers checks the managedFields entries of configmap default/ssa
// ("manager operation" each, in order).
func expectManagers(t *testing.T, s *Server, when string, want ...string) {
	t.Helper()
	var mf []metav1.ManagedFieldsEntry
	out := s.Kubectl(t, "get", "cm", "ssa", "-n", "default", "-o", "jsonpath={.metadata.managedFields}")
	if err := json.Unmarshal([]byte(out), &mf); err != nil {
		t.Fatalf("managedFields %q: %v", out, err)
	}
	var got []string
	for _, e := range mf {
		got = append(got, e.Manager+" "+string(e.Operation))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("%s: managedFields %q, want %q\n%s", when, got, want, out)
	}
}
