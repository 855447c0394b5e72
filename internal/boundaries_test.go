// Package internal_test checks the import boundaries of DESIGN.md §3.
package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rule forbids the files it applies to from importing the packages denied
// says are denied.
type rule struct {
	why string
	// under is true for the importing package (and file) the rule is about.
	under func(pkg, path string) bool
	// denied is true for an import the rule forbids.
	denied func(target string) bool
}

var rules = []rule{
	{
		why:    "only internal/server, internal/agent and internal/cli are composition roots",
		under:  func(pkg, _ string) bool { return !isRoot(pkg) },
		denied: within("orch/internal/server", "orch/internal/agent", "orch/internal/cli"),
	},
	{
		why: "only internal/apiserver (and the roots) touch storage",
		under: func(pkg, _ string) bool {
			return !isRoot(pkg) && !under(pkg, "orch/internal/apiserver") && !under(pkg, "orch/internal/storage") &&
				pkg != "orch/internal/envtest" // the test environment runs the real stack
		},
		denied: within("orch/internal/storage"),
	},
	{
		why:    "scheduler, controllers, kubelet, proxy, dns and network speak HTTP to the apiserver through client-go",
		under:  func(pkg, _ string) bool { return within(components...)(pkg) },
		denied: within("orch/internal/apiserver"),
	},
	{
		why:    "the scheduler and the agent import no controller package (what they share lives below them)",
		under:  func(pkg, _ string) bool { return within("orch/internal/scheduler", "orch/internal/agent")(pkg) },
		denied: within("orch/internal/controller"),
	},
	{
		why:    "only test code (_test.go files and *test packages) imports a *test package",
		under:  func(pkg, path string) bool { return !isTestCode(pkg, path) },
		denied: func(target string) bool { return strings.HasSuffix(target[strings.LastIndex(target, "/")+1:], "test") },
	},
	{
		why:    "the kubelet imports neither the apiserver nor the server",
		under:  func(pkg, _ string) bool { return within("orch/internal/kubelet")(pkg) },
		denied: within("orch/internal/apiserver", "orch/internal/server"),
	},
}

// components are the packages that are API clients of the apiserver.
var components = []string{"orch/internal/scheduler", "orch/internal/controller", "orch/internal/kubelet",
	"orch/internal/proxy", "orch/internal/netpol", "orch/internal/ingress", "orch/internal/gateway", "orch/internal/routing", "orch/internal/dns", "orch/internal/network"}

func isRoot(pkg string) bool {
	return within("orch/internal/server", "orch/internal/agent", "orch/internal/cli", "orch/internal/e2e")(pkg) ||
		pkg == "orch" || pkg == "orch/internal"
}

// isTestCode is true for _test.go files and test-helper packages (*test).
func isTestCode(pkg, path string) bool {
	return strings.HasSuffix(path, "_test.go") || strings.HasSuffix(pkg, "test")
}

// within is true for a package that is one of prefixes or below one.
func within(prefixes ...string) func(pkg string) bool {
	return func(pkg string) bool {
		for _, p := range prefixes {
			if under(pkg, p) {
				return true
			}
		}
		return false
	}
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

func TestImportBoundaries(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := "orch/internal"
		if dir := filepath.Dir(path); dir != "." {
			pkg += "/" + filepath.ToSlash(dir)
		}
		for _, imp := range file.Imports {
			target, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range rules {
				if r.under(pkg, path) && r.denied(target) {
					t.Errorf("%s imports %s: %s", path, target, r.why)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
