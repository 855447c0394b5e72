// Command gateway-crds writes manifests/gateway.yaml (internal/gateway's
// Manifest) from the sigs.k8s.io/gateway-api module go.mod pins: the
// definitions come from the module, not from a copy in this tree. `make
// build` runs it; the file is not committed.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"orch/internal/gateway"
)

const out = "manifests/gateway.yaml"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-crds:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return fmt.Errorf("find the sigs.k8s.io/gateway-api module (go mod download?): %w", err)
	}
	data, err := gateway.Manifest(strings.TrimSpace(string(dir)))
	if err != nil {
		return err
	}
	if have, err := os.ReadFile(out); err == nil && bytes.Equal(have, data) {
		fmt.Println("gateway-crds:", out, "is up to date")
		return nil
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return err
	}
	fmt.Println("gateway-crds: wrote", out)
	return nil
}
