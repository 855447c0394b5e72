package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const appNS = "e2e-app"

// appYAML is testdata/app.yaml; editedAppYAML is the same application after
// a user edited it: 3 replicas and a newer image for the Deployment, the
// ConfigMap's greeting changed and its "obsolete" key removed.
func appYAML(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func editedAppYAML(t *testing.T) string {
	t.Helper()
	y := appYAML(t)
	for _, r := range [][2]string{
		{"replicas: 2", "replicas: 3"},
		{"image: busybox:1.36\n        command: [\"httpd\"", "image: busybox:1.37\n        command: [\"httpd\""},
		{"greeting: hello\n  obsolete: \"yes\"", "greeting: bonjour"},
	} {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("testdata/app.yaml no longer contains %q", r[0])
		}
		y = strings.Replace(y, r[0], r[1], 1)
	}
	return y
}

// writeFile writes content to a new file in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// deployApp creates the namespace and applies testdata/app.yaml, checking
// what kubectl reports for each object.
func deployApp(t *testing.T, s *Server) {
	t.Helper()
	expectLines(t, s.Kubectl(t, "create", "namespace", appNS), "namespace/"+appNS+" created")
	r := s.Run(t, Cmd{Args: []string{"apply", "-f", "testdata/app.yaml"}})
	if r.Code != 0 {
		t.Fatalf("apply -f testdata/app.yaml: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// The namespace exists without kubectl's last-applied annotation, so
	// apply warns and patches it ("configured"), as upstream does.
	expectLines(t, r.Stdout, "namespace/"+appNS+" configured", "deployment.apps/web created", "service/web created",
		"configmap/web-config created", "secret/web-secret created", "job.batch/once created", "cronjob.batch/nightly created")
	if !strings.Contains(r.Stderr, "missing the kubectl.kubernetes.io/last-applied-configuration annotation") {
		t.Errorf("apply of a namespace made by create: no warning about the missing annotation:\n%s", r.Stderr)
	}
}

// expectLines checks that out is exactly these lines.
func expectLines(t *testing.T, out string, want ...string) {
	t.Helper()
	if got := strings.TrimRight(out, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// jsonpath is `kubectl get -o jsonpath=EXPR` of one object in appNS.
func jsonpath(t *testing.T, s *Server, resource, name, expr string) string {
	t.Helper()
	return s.Kubectl(t, "get", resource, name, "-n", appNS, "-o", "jsonpath="+expr)
}

// TestApply is acceptance item 2's apply cycle: apply, apply again with no
// change, edit the file and apply (a strategic merge patch), diff.
func TestApply(t *testing.T) {
	s := StartServer(t)
	deployApp(t, s)
	rv := jsonpath(t, s, "deploy", "web", "{.metadata.resourceVersion}")
	if g := jsonpath(t, s, "deploy", "web", "{.metadata.generation}"); g != "1" {
		t.Errorf("new deployment: generation %q, want 1", g)
	}

	t.Run("apply again", func(t *testing.T) {
		// A Secret with stringData always differs from what is stored
		// (data), so upstream reports it "configured" too.
		expectLines(t, s.Kubectl(t, "apply", "-f", "testdata/app.yaml"), "namespace/"+appNS+" unchanged",
			"deployment.apps/web unchanged", "service/web unchanged", "configmap/web-config unchanged",
			"secret/web-secret configured", "job.batch/once unchanged", "cronjob.batch/nightly unchanged")
		if got := jsonpath(t, s, "deploy", "web", "{.metadata.resourceVersion}"); got != rv {
			t.Errorf("unchanged apply wrote the deployment: resourceVersion %s -> %s", rv, got)
		}
	})

	t.Run("diff unchanged", func(t *testing.T) {
		r := s.Run(t, Cmd{Args: []string{"diff", "-f", "testdata/app.yaml"}})
		if r.Code != 0 || r.Stdout != "" {
			t.Errorf("diff -f of what was applied: exit %d, want 0 and no output\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	edited := writeFile(t, "app.yaml", editedAppYAML(t))
	// A label someone else added must survive the apply (three-way merge).
	s.Kubectl(t, "label", "deploy", "web", "-n", appNS, "owner=ops")

	t.Run("diff changed", func(t *testing.T) {
		r := s.Run(t, Cmd{Args: []string{"diff", "-f", edited}})
		if r.Code != 1 {
			t.Errorf("diff -f of an edited file: exit %d, want 1 (differences)\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, want := range []string{"-  replicas: 2", "+  replicas: 3", "-        image: busybox:1.36", "+        image: busybox:1.37",
			"-  greeting: hello", "+  greeting: bonjour", "-  obsolete: \"yes\""} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("diff output lacks %q:\n%s", want, r.Stdout)
			}
		}
		if got := jsonpath(t, s, "deploy", "web", "{.spec.replicas}"); got != "2" {
			t.Errorf("diff changed the live object: replicas %s", got)
		}
	})

	t.Run("apply edited", func(t *testing.T) {
		expectLines(t, s.Kubectl(t, "apply", "-f", edited), "namespace/"+appNS+" unchanged",
			"deployment.apps/web configured", "service/web unchanged", "configmap/web-config configured",
			"secret/web-secret configured", "job.batch/once unchanged", "cronjob.batch/nightly unchanged")
		got := jsonpath(t, s, "deploy", "web", `{.metadata.generation} {.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].command} {.metadata.labels.owner}`)
		if want := `2 3 busybox:1.37 ["httpd","-f","-p","8080"] ops`; got != want {
			t.Errorf("deployment after apply: %q, want %q (generation, replicas, image, command, kept label)", got, want)
		}
		if got := jsonpath(t, s, "cm", "web-config", "{.data}"); got != `{"greeting":"bonjour"}` {
			t.Errorf("configmap data after apply: %s, want only greeting=bonjour (obsolete removed)", got)
		}
		r := s.Run(t, Cmd{Args: []string{"diff", "-f", edited}})
		if r.Code != 0 || r.Stdout != "" {
			t.Errorf("diff -f after applying it: exit %d, want 0 and no output\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
