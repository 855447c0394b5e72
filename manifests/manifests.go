// Package manifests holds the default objects `orch server` writes into
// data-dir/server/manifests at start (see internal/manifests.WriteDefaults),
// from where they are applied like any user manifest. Each file can be
// turned off with `--disable NAME`, NAME being the file name without its
// extension.
//
//   - local-storage.yaml: StorageClass "local-storage" for local
//     PersistentVolumes an administrator creates (provisioner
//     kubernetes.io/no-provisioner, volumeBindingMode WaitForFirstConsumer,
//     so a claim is bound to a volume on the node its pod is scheduled to).
//     It is not the default class: orch provisions no volumes.
package manifests

import "embed"

// Defaults is the built-in manifests.
//
//go:embed *.yaml
var Defaults embed.FS
