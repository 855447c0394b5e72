package manifests

import (
	"bytes"
	"io/fs"
	"os/exec"
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"orch/internal/gateway"
	"orch/internal/localpath"
)

// TestGatewayManifest: the embedded gateway.yaml is what
// scripts/gateway-crds makes from the sigs.k8s.io/gateway-api module
// go.mod pins now (so a version bump without `make build` fails here).
func TestGatewayManifest(t *testing.T) {
	have, err := fs.ReadFile(Defaults, "gateway.yaml")
	if err != nil {
		t.Fatalf("gateway.yaml is not embedded (run make build, or go run ./scripts/gateway-crds, before testing): %v", err)
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := gateway.Manifest(strings.TrimSpace(string(dir)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("manifests/gateway.yaml is stale: run make build (or go run ./scripts/gateway-crds)")
	}
	for _, kind := range []string{"kind: GatewayClass", "kind: Gateway\n", "kind: HTTPRoute\n", "kind: ReferenceGrant\n"} {
		if !bytes.Contains(have, []byte(kind)) {
			t.Errorf("gateway.yaml has no %q", kind)
		}
	}
}

// TestLocalPathManifest: the default StorageClass names the provisioner
// the server runs.
func TestLocalPathManifest(t *testing.T) {
	data, err := fs.ReadFile(Defaults, "local-path.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sc storagev1.StorageClass
	if err := yaml.UnmarshalStrict(data, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Provisioner != localpath.Provisioner || sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Errorf("local-path.yaml = %+v, want the default class of %s, WaitForFirstConsumer, expandable", sc, localpath.Provisioner)
	}
}
