package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmModule is the Helm release the test builds from the module proxy.
const helmModule = "helm.sh/helm/v3@v3.22.0"

// helmChart is the test's chart: the Widget CRD in crds/, and templates
// that make a Widget and a ConfigMap from its values.
const helmChart = "testdata/widgets"

// Helm runs a helm binary against one server, with a home and XDG
// directories of its own.
type Helm struct {
	bin string
	env []string
}

// newHelm points bin at s. Any HTTP(S) request that is not to a loopback
// address (Go never proxies those) goes to a proxy that refuses it, so the
// test fails if Helm needs the network for a local chart.
func newHelm(t *testing.T, s *Server, bin string) *Helm {
	t.Helper()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "KUBECONFIG="+s.Kubeconfig,
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "HELM_NAMESPACE=default",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy=")
	return &Helm{bin: bin, env: env}
}

// Run runs helm ARGS... to completion.
func (h *Helm) Run(t *testing.T, args ...string) Result {
	t.Helper()
	return runTool(t, "helm", h.bin, args, h.env, "")
}

// OK runs helm and fails the test unless it exits 0; it returns stdout.
func (h *Helm) OK(t *testing.T, args ...string) string {
	t.Helper()
	return succeeded(t, "helm "+strings.Join(args, " "), h.Run(t, args...))
}

// TestHelm is issue 17's acceptance item 2: upstream Helm, built from the
// module proxy, installs, upgrades and uninstalls a chart with a CRD in
// crds/ and a custom resource of it in its templates, and kubectl serves
// the kind as upstream does: defaults, printer columns, the all category,
// explain, enum validation and server-side apply conflicts.
func TestHelm(t *testing.T) {
	started := time.Now()
	helm := goBuild(t, goModule(t, helmModule), "./cmd/helm")
	t.Logf("helm built from the module proxy in %v", time.Since(started).Round(time.Second))
	s := StartServer(t)
	h := newHelm(t, s, helm)

	out := h.OK(t, "install", "demo", helmChart, "--wait", "--timeout", "60s")
	expectMatches(t, "helm install", out, `(?m)^STATUS: deployed$`, `(?m)^REVISION: 1$`)
	if got := s.Kubectl(t, "get", "crd", "widgets.e2e.orch.io", "-o", "jsonpath={.status.conditions[?(@.type==\"Established\")].status}"); got != "True" {
		t.Errorf("the chart's CRD is Established=%s, want True", orEmpty(got))
	}
	// replicas is not in the chart's Widget: the schema's default fills it.
	if got := s.Kubectl(t, "get", "widget", "demo-widget", "-o", "jsonpath={.spec.size}/{.spec.replicas}/{.spec.owner.name}"); got != "small/1/ops" {
		t.Errorf("the installed Widget's size/replicas/owner are %s, want small/1/ops", got)
	}
	if got := s.Kubectl(t, "get", "configmap", "demo-settings", "-o", "jsonpath={.data.size}"); got != "small" {
		t.Errorf("the installed ConfigMap's size is %s, want small", orEmpty(got))
	}

	t.Run("get", func(t *testing.T) { testWidgetColumns(t, s) })
	t.Run("explain", func(t *testing.T) { testWidgetExplain(t, s) })
	t.Run("apply", func(t *testing.T) { testWidgetApply(t, s) })

	// The status subresource keeps status apart: what it writes survives
	// Helm's patch of the Widget, and a spec change through it is dropped.
	s.Kubectl(t, "patch", "widget", "demo-widget", "--subresource=status", "--type=merge",
		"-p", `{"spec":{"size":"medium"},"status":{"ready":1}}`)
	out = h.OK(t, "upgrade", "demo", helmChart, "--set", "size=large", "--set", "replicas=3", "--wait", "--timeout", "60s")
	expectMatches(t, "helm upgrade", out, `(?m)^STATUS: deployed$`, `(?m)^REVISION: 2$`)
	if got := s.Kubectl(t, "get", "widget", "demo-widget", "-o", "jsonpath={.spec.size}/{.spec.replicas}/{.status.ready}/{.metadata.generation}"); got != "large/3/1/2" {
		t.Errorf("after helm upgrade the Widget's size/replicas/status.ready/generation are %s, want large/3/1/2", got)
	}
	if got := s.Kubectl(t, "get", "configmap", "demo-settings", "-o", "jsonpath={.data.size}"); got != "large" {
		t.Errorf("after helm upgrade the ConfigMap's size is %s, want large", orEmpty(got))
	}

	expectLines(t, h.OK(t, "uninstall", "demo", "--wait"), `release "demo" uninstalled`)
	for _, obj := range []string{"widget/demo-widget", "configmap/demo-settings"} {
		if got := s.Kubectl(t, "get", obj, "--ignore-not-found", "-o", "name"); got != "" {
			t.Errorf("helm uninstall left %s", got)
		}
	}
	if got := h.OK(t, "list", "--short"); got != "" {
		t.Errorf("helm list after uninstall: %s", got)
	}
	// As upstream, Helm leaves the CRDs of crds/ (and so their objects) in place.
	expectLines(t, s.Kubectl(t, "get", "crd", "widgets.e2e.orch.io", "-o", "name"),
		"customresourcedefinition.apiextensions.k8s.io/widgets.e2e.orch.io")
	expectLines(t, s.Kubectl(t, "get", "widgets", "-o", "name"), "widget.e2e.orch.io/applied")
}

// testWidgetColumns: `kubectl get` prints the CRD's printer columns (the
// priority-1 one with -o wide, by the short name too), and `get all` lists
// Widgets, whose CRD puts them in the category all.
func testWidgetColumns(t *testing.T, s *Server) {
	age := `[0-9]+[smhd]`
	out := s.Kubectl(t, "get", "widgets")
	expectMatches(t, "kubectl get widgets", out, `^NAME\s+SIZE\s+REPLICAS\s+AGE\n`, `(?m)^demo-widget\s+small\s+1\s+`+age+`$`)
	out = s.Kubectl(t, "get", "wdg", "-o", "wide")
	expectMatches(t, "kubectl get wdg -o wide", out, `^NAME\s+SIZE\s+REPLICAS\s+OWNER\s+AGE\n`, `(?m)^demo-widget\s+small\s+1\s+ops\s+`+age+`$`)
	out = s.Kubectl(t, "get", "all")
	expectMatches(t, "kubectl get all", out, `(?m)^service/kubernetes\s`,
		`(?m)^NAME\s+SIZE\s+REPLICAS\s+AGE$`, `(?m)^widget\.e2e\.orch\.io/demo-widget\s+small\s+1\s+`+age+`$`)
}

// testWidgetExplain: `kubectl explain` shows the schema's descriptions and
// enum, from the CRD's OpenAPI.
func testWidgetExplain(t *testing.T, s *Server) {
	out := s.Kubectl(t, "explain", "widget.spec.owner")
	expectMatches(t, "kubectl explain widget.spec.owner", out, `(?m)^GROUP:\s+e2e\.orch\.io$`, `(?m)^KIND:\s+Widget$`,
		`(?m)^VERSION:\s+v1$`, `(?m)^FIELD: owner <Object>$`, `Owner is whom to call when the widget breaks\.`,
		`(?m)^  email\t<string>\n    Where to write to the owner\.$`)
	out = s.Kubectl(t, "explain", "widgets.spec")
	expectMatches(t, "kubectl explain widgets.spec", out, `(?m)^  size\t<string> -required-\n  enum: small, medium, large$`,
		`(?m)^  replicas\t<integer>\n    How many copies of the widget to make\.$`)
}

// testWidgetApply: server-side apply of another Widget, a conflict with a
// second field manager unless --force-conflicts, and the enum refusing a
// size it does not list.
func testWidgetApply(t *testing.T, s *Server) {
	widget := func(size string) string {
		return "apiVersion: e2e.orch.io/v1\nkind: Widget\nmetadata:\n  name: applied\n  namespace: default\nspec:\n  size: " + size + "\n"
	}
	expectLines(t, s.KubectlIn(t, widget("medium")+"  owner:\n    name: dev\n", "apply", "--server-side", "-f", "-"),
		"widget.e2e.orch.io/applied serverside-applied")

	rival := []string{"apply", "--server-side", "--field-manager", "rival", "-f", "-"}
	r := s.Run(t, Cmd{Args: rival, Stdin: widget("large")})
	if r.Code == 0 || !strings.Contains(r.Stderr, `Apply failed with 1 conflict: conflict with "kubectl": .spec.size`) {
		t.Errorf("apply by another manager of a field kubectl applied: exit %d %q, want a conflict on .spec.size", r.Code, r.Stderr)
	}
	if got := s.Kubectl(t, "get", "widget", "applied", "-o", "jsonpath={.spec.size}"); got != "medium" {
		t.Errorf("a conflicting apply changed the Widget's size to %s", got)
	}
	expectLines(t, s.KubectlIn(t, widget("large"), append(rival, "--force-conflicts")...),
		"widget.e2e.orch.io/applied serverside-applied")
	// The rival took spec.size; kubectl's spec.owner and the default stay.
	if got := s.Kubectl(t, "get", "widget", "applied", "-o", "jsonpath={.spec.size}/{.spec.owner.name}/{.spec.replicas}"); got != "large/dev/1" {
		t.Errorf("after --force-conflicts the Widget's size/owner/replicas are %s, want large/dev/1", got)
	}

	r = s.Run(t, Cmd{Args: []string{"apply", "--server-side", "-f", "-"}, Stdin: strings.Replace(widget("huge"), "applied", "huge", 1)})
	if r.Code == 0 || !strings.Contains(r.Stderr, `spec.size: Unsupported value: "huge": supported values: "small", "medium", "large"`) {
		t.Errorf("apply of a size the enum does not list: exit %d %q, want Unsupported value", r.Code, r.Stderr)
	}
}
