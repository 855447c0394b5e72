package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestKubectlVerbs is acceptance item 2's writing side: label, annotate,
// scale, patch of every type, edit, create configmap/secret, explain, and
// delete by name, -f, -l and --all.
func TestKubectlVerbs(t *testing.T) {
	s := StartServer(t)
	deployApp(t, s)
	ns := []string{"-n", appNS}
	kc := func(args ...string) string { t.Helper(); return s.Kubectl(t, append(args, ns...)...) }

	t.Run("label", func(t *testing.T) {
		expectLines(t, kc("label", "cm", "web-config", "color=blue"), "configmap/web-config labeled")
		parseTable(kc("get", "cm", "-L", "color")).expectRow(t, "NAME", "web-config", "COLOR", "blue")
		r := s.Run(t, Cmd{Args: append([]string{"label", "cm", "web-config", "color=red"}, ns...)})
		if r.Code == 0 || !strings.Contains(r.Stderr, "already has a value (blue), and --overwrite is false") {
			t.Errorf("label without --overwrite: exit %d %s, want an error", r.Code, r.Stderr)
		}
		expectLines(t, kc("label", "cm", "web-config", "color=red", "--overwrite"), "configmap/web-config labeled")
		expectLines(t, kc("label", "cm", "web-config", "color-"), "configmap/web-config unlabeled")
		if got := jsonpath(t, s, "cm", "web-config", "{.metadata.labels}"); got != `{"tier":"e2e"}` {
			t.Errorf("labels after label/overwrite/remove: %s, want only tier=e2e", got)
		}
	})

	t.Run("annotate", func(t *testing.T) {
		expectLines(t, kc("annotate", "deploy", "web", "note=hello world"), "deployment.apps/web annotated")
		// Upstream bumps a Deployment's generation when its annotations change.
		if got := jsonpath(t, s, "deploy", "web", "{.metadata.annotations.note} {.metadata.generation}"); got != "hello world 2" {
			t.Errorf("after annotate: %q, want the note and generation 2", got)
		}
	})

	t.Run("scale", func(t *testing.T) {
		expectLines(t, kc("scale", "deploy", "web", "--replicas=5"), "deployment.apps/web scaled")
		if got := jsonpath(t, s, "deploy", "web", "{.spec.replicas} {.metadata.generation}"); got != "5 3" {
			t.Errorf("after scale: replicas and generation %q, want 5 3", got)
		}
		r := s.Run(t, Cmd{Args: append([]string{"scale", "deploy", "web", "--current-replicas=3", "--replicas=6"}, ns...)})
		if r.Code == 0 || jsonpath(t, s, "deploy", "web", "{.spec.replicas}") != "5" {
			t.Errorf("scale --current-replicas=3 of a 5-replica deployment: exit %d, want a refusal and replicas still 5\n%s", r.Code, r.Stderr)
		}
	})

	t.Run("patch", func(t *testing.T) {
		expectLines(t, kc("patch", "cm", "web-config", "--type", "json", "-p", `[{"op":"add","path":"/data/j","value":"1"},{"op":"remove","path":"/data/obsolete"}]`),
			"configmap/web-config patched")
		expectLines(t, kc("patch", "cm", "web-config", "--type", "merge", "-p", `{"data":{"m":"2","j":null}}`), "configmap/web-config patched")
		if got := jsonpath(t, s, "cm", "web-config", "{.data}"); got != `{"greeting":"hello","m":"2"}` {
			t.Errorf("after json and merge patches: data %s", got)
		}
		// A strategic merge patch merges containers by name: the image
		// changes, the command stays, and a second container is added.
		expectLines(t, kc("patch", "deploy", "web", "--type", "strategic", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"busybox:1.37"},{"name":"sidecar","image":"busybox:1.37"}]}}}}`),
			"deployment.apps/web patched")
		got := jsonpath(t, s, "deploy", "web", `{range .spec.template.spec.containers[*]}{.name}={.image}{.command} {end}`)
		if got != `web=busybox:1.37["httpd","-f","-p","8080"] sidecar=busybox:1.37 ` {
			t.Errorf("containers after strategic merge patch: %q", got)
		}
		// The same patch as a JSON merge patch replaces the whole list.
		expectLines(t, kc("patch", "deploy", "web", "--type", "merge", "-p",
			`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"busybox:1.36"}]}}}}`), "deployment.apps/web patched")
		got = jsonpath(t, s, "deploy", "web", `{range .spec.template.spec.containers[*]}{.name}={.image}{.command} {end}`)
		if got != `web=busybox:1.36 ` {
			t.Errorf("containers after merge patch: %q, want only web without a command", got)
		}
		r := s.Run(t, Cmd{Args: append([]string{"patch", "cm", "web-config", "--type", "json", "-p", `[{"op":"remove","path":"/data/nosuch"}]`}, ns...)})
		if r.Code == 0 || r.Stderr == "" {
			t.Errorf("json patch removing a missing key: exit %d %q, want an error (upstream: 422)", r.Code, r.Stderr)
		}
	})

	t.Run("edit", func(t *testing.T) {
		r := s.Run(t, Cmd{Args: append([]string{"edit", "cm", "web-config"}, ns...), Env: []string{"EDITOR=sed -i s/greeting:.hello/greeting:\\ hallo/"}})
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "configmap/web-config edited" {
			t.Errorf("edit: exit %d %q %q, want configmap/web-config edited", r.Code, r.Stdout, r.Stderr)
		}
		if got := jsonpath(t, s, "cm", "web-config", "{.data.greeting}"); got != "hallo" {
			t.Errorf("greeting after edit: %q, want hallo", got)
		}
		r = s.Run(t, Cmd{Args: append([]string{"edit", "cm", "web-config"}, ns...), Env: []string{"EDITOR=true"}})
		if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "Edit cancelled, no changes made.") {
			t.Errorf("edit without changes: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("create configmap and secret", func(t *testing.T) {
		expectLines(t, kc("create", "configmap", "lit", "--from-literal=a=1", "--from-literal=b=two words"), "configmap/lit created")
		if got := jsonpath(t, s, "cm", "lit", "{.data}"); got != `{"a":"1","b":"two words"}` {
			t.Errorf("configmap from literals: %s", got)
		}
		expectLines(t, kc("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pass=p@ss"), "secret/creds created")
		parseTable(kc("get", "secret", "creds")).expectRow(t, "NAME", "creds", "TYPE", "Opaque", "DATA", "2")
		user, _ := base64.StdEncoding.DecodeString(jsonpath(t, s, "secret", "creds", "{.data.user}"))
		if string(user) != "admin" {
			t.Errorf("secret data.user decodes to %q, want admin", user)
		}
		r := s.Run(t, Cmd{Args: append([]string{"create", "configmap", "lit", "--from-literal=a=1"}, ns...)})
		if r.Code == 0 || !strings.Contains(r.Stderr, `configmaps "lit" already exists`) {
			t.Errorf("create of an existing configmap: exit %d %q", r.Code, r.Stderr)
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := s.Kubectl(t, "explain", "deployment.spec.strategy")
		expectMatches(t, "explain", out, `(?m)^KIND:\s+Deployment$`, `(?m)^VERSION:\s+v1$`, `(?m)^FIELD: strategy <DeploymentStrategy>$`,
			`The deployment strategy to use to replace existing pods with new ones`, `(?m)^\s+rollingUpdate\s+<RollingUpdateDeployment>$`,
			`(?m)^\s+type\s+<string>$`, `Recreate`)
	})

	t.Run("delete", func(t *testing.T) {
		expectLines(t, kc("delete", "cm", "lit"), `configmap "lit" deleted from `+appNS+` namespace`)
		r := s.Run(t, Cmd{Args: append([]string{"delete", "cm", "lit"}, ns...)})
		if r.Code == 0 || !strings.Contains(r.Stderr, `Error from server (NotFound): configmaps "lit" not found`) {
			t.Errorf("delete of a missing configmap: exit %d %q", r.Code, r.Stderr)
		}
		two := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: " + appNS + "}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: " + appNS + "}\n"
		expectLines(t, s.KubectlIn(t, two, "apply", "-f", "-"), "configmap/one created", "configmap/two created")
		extra := writeFile(t, "extra.yaml", two)
		expectLines(t, s.Kubectl(t, "delete", "-f", extra), `configmap "one" deleted from `+appNS+` namespace`,
			`configmap "two" deleted from `+appNS+` namespace`)
		expectLines(t, kc("delete", "deploy,svc,cm,job,cronjob", "-l", "tier=e2e"), `deployment.apps "web" deleted from `+appNS+` namespace`,
			`service "web" deleted from `+appNS+` namespace`, `configmap "web-config" deleted from `+appNS+` namespace`,
			`job.batch "once" deleted from `+appNS+` namespace`, `cronjob.batch "nightly" deleted from `+appNS+` namespace`)
		expectLines(t, kc("delete", "secret", "--all"), `secret "creds" deleted from `+appNS+` namespace`,
			`secret "web-secret" deleted from `+appNS+` namespace`)
		// Only the kube-root-ca.crt ConfigMap every namespace has is left.
		r = s.Run(t, Cmd{Args: append([]string{"get", "deploy,svc,cm,secret,job,cronjob", "--field-selector", "metadata.name!=kube-root-ca.crt"}, ns...)})
		if r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "No resources found in "+appNS+" namespace.") {
			t.Errorf("get after deleting everything: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
		}
	})
}
