// Command binary-image writes a container image archive of one static
// binary, under each name it is given, into a directory: one
// docker-archive per name (OUT/<name with / and : as _>.tar) and
// OUT/images.txt listing file and name, as ../shared/conformance/images.sh
// writes them. It builds the test images of suites that orch runs without
// a registry, e.g. Gateway API's echo-basic:
//
//	binary-image -binary bin/echo-basic -path /echo-basic -user 65532 \
//	  -out DIR registry.k8s.io/gateway-api/echo-basic:v1.5.1
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"orch/internal/kubelet/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "binary-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("binary-image", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static binary")
	at := fs.String("path", "", "where it is in the image, and the entrypoint (default: /<its name>)")
	user := fs.String("user", "", "the user the image runs as (e.g. 65532, distroless's nonroot)")
	out := fs.String("out", "", "the directory to write the archives and images.txt into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *out == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: binary-image -binary FILE [-path /NAME] [-user UID] -out DIR REF...")
	}
	if *at == "" {
		*at = "/" + filepath.Base(*binary)
	}
	data, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var list strings.Builder
	for _, ref := range fs.Args() {
		name := strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".tar"
		f, err := os.Create(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		err = images.Write(f, ref, []images.File{{Path: *at, Mode: 0o755, Data: data}},
			images.Config{Arch: runtime.GOARCH, Entrypoint: []string{*at}, User: *user, WorkingDir: "/"})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		fmt.Fprintf(&list, "%s\t%s\n", name, ref)
	}
	return os.WriteFile(filepath.Join(*out, "images.txt"), []byte(list.String()), 0o644)
}
