package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orch/internal/simnode"
)

// sampleControllerModule is upstream's sample-controller at the newest
// release the module proxy serves of the k8s.io/api minor in go.mod
// (v0.37.2 is refused by the proxy).
const sampleControllerModule = "k8s.io/sample-controller@v0.37.1"

// TestSampleController is issue 17's acceptance item 1: upstream's
// sample-controller, unmodified, against orch with the admin kubeconfig.
// Its CRD (with the status subresource) and example Foo make the
// Deployment the Foo asks for, and the Foo's status shows the available
// replicas (the pods run on a simulated node).
func TestSampleController(t *testing.T) {
	dir := goModule(t, sampleControllerModule)
	bin := goBuild(t, dir, ".")
	c := startSimCluster(t, simnode.Node{Name: "sim-a"})
	s := c.Server

	s.Kubectl(t, "apply", "-f", filepath.Join(dir, "artifacts", "examples", "crd-status-subresource.yaml"))
	s.Kubectl(t, "wait", "--for=condition=Established", "crd/foos.samplecontroller.k8s.io", "--timeout=30s")

	var logs bytes.Buffer
	ctl := exec.Command(bin, "-kubeconfig", s.Kubeconfig)
	ctl.Stdout, ctl.Stderr = &logs, &logs
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctl.Process.Kill()
		ctl.Wait()
		if t.Failed() {
			t.Logf("sample-controller's log:\n%s", logs.String())
		}
	})

	s.Kubectl(t, "apply", "-f", filepath.Join(dir, "artifacts", "examples", "example-foo.yaml"))
	s.Kubectl(t, "rollout", "status", "deployment/example-foo", "--timeout=90s")
	if owner := s.Kubectl(t, "get", "deployment", "example-foo", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}"); owner != "Foo/example-foo" {
		t.Errorf("the deployment's owner is %q, want Foo/example-foo", owner)
	}
	eventually(t, 60*time.Second, func() string {
		got := s.Kubectl(t, "get", "foo", "example-foo", "-o", "jsonpath={.status.availableReplicas}")
		if got != "1" {
			return "the Foo's status.availableReplicas is " + orEmpty(got) + ", want 1"
		}
		return ""
	})

	// Scaling the Foo scales the Deployment; deleting it deletes the
	// Deployment through the garbage collector.
	s.Kubectl(t, "patch", "foo", "example-foo", "--type=merge", "-p", `{"spec":{"replicas":2}}`)
	eventually(t, 60*time.Second, func() string {
		if got := s.Kubectl(t, "get", "foo", "example-foo", "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
			return "availableReplicas " + orEmpty(got) + " after scaling the Foo to 2"
		}
		return ""
	})
	s.Kubectl(t, "delete", "foo", "example-foo")
	eventually(t, 60*time.Second, func() string {
		if out := s.Kubectl(t, "get", "deployments", "-o", "name"); strings.Contains(out, "example-foo") {
			return "the deployment outlived its Foo"
		}
		return ""
	})
}

func orEmpty(s string) string {
	if s == "" {
		return "empty"
	}
	return s
}
