// Package manifests holds the default objects `orch server` writes into
// data-dir/server/manifests at start (see internal/manifests.WriteDefaults),
// from where they are applied like any user manifest. Each file can be
// turned off with `--disable NAME`, NAME being the file name without its
// extension.
//
//   - local-path.yaml: StorageClass "local-path", the default class, of
//     the built-in local-path provisioner (orch.io/local-path; see
//     internal/localpath): WaitForFirstConsumer, reclaimPolicy Delete,
//     allowVolumeExpansion.
//   - local-storage.yaml: StorageClass "local-storage" for local
//     PersistentVolumes an administrator creates (provisioner
//     kubernetes.io/no-provisioner, volumeBindingMode WaitForFirstConsumer,
//     so a claim is bound to a volume on the node its pod is scheduled to).
//   - ingress.yaml: IngressClass "orch", the default class, of the
//     built-in Ingress controller.
//   - gateway.yaml: Gateway API's CustomResourceDefinitions (GatewayClass,
//     Gateway, HTTPRoute, ReferenceGrant) and the GatewayClass "orch" of
//     the built-in Gateway controller; written only with --gateway-api. It is generated from the
//     sigs.k8s.io/gateway-api module by `make build` (scripts/gateway-crds)
//     and not committed; TestGatewayManifest checks it is current.
package manifests

import "embed"

// Defaults is the built-in manifests.
//
//go:embed *.yaml
var Defaults embed.FS
