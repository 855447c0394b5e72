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

// rule forbids packages under from importing any of the listed prefixes.
type rule struct {
	why    string
	under  func(pkg string) bool
	denied []string
}

var rules = []rule{
	{
		why:    "only internal/server, internal/agent and internal/cli are composition roots",
		under:  func(pkg string) bool { return !isRoot(pkg) },
		denied: []string{"orch/internal/server", "orch/internal/agent", "orch/internal/cli"},
	},
	{
		why: "only internal/apiserver (and the roots) touch storage",
		under: func(pkg string) bool {
			return !isRoot(pkg) && !within(pkg, "orch/internal/apiserver") && !within(pkg, "orch/internal/storage") &&
				pkg != "orch/internal/envtest" // the test environment runs the real stack
		},
		denied: []string{"orch/internal/storage"},
	},
	{
		why: "scheduler, controllers, kubelet, proxy and dns speak HTTP to the apiserver through client-go",
		under: func(pkg string) bool {
			for _, p := range []string{"scheduler", "controller", "kubelet", "proxy", "dns", "network"} {
				if within(pkg, "orch/internal/"+p) {
					return true
				}
			}
			return false
		},
		denied: []string{"orch/internal/apiserver"},
	},
}

func isRoot(pkg string) bool {
	return within(pkg, "orch/internal/server") || within(pkg, "orch/internal/agent") || within(pkg, "orch/internal/cli") ||
		within(pkg, "orch/internal/e2e") || pkg == "orch" || pkg == "orch/internal"
}

// isTestCode is true for _test.go files and test-helper packages (*test).
func isTestCode(path, pkg string) bool {
	return strings.HasSuffix(path, "_test.go") || strings.HasSuffix(pkg, "test")
}

func within(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

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
				if !r.under(pkg) {
					continue
				}
				for _, denied := range r.denied {
					if within(target, denied) {
						t.Errorf("%s imports %s: %s", path, target, r.why)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
