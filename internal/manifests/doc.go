// Package manifests applies the files of orch's manifests directory
// (data-dir/server/manifests) to the cluster, as k3s's deploy controller
// does.
//
// Every *.yaml, *.yml and *.json file there (not hidden files, not
// subdirectories, not a file with NAME.skip beside it) is applied when the
// Applier starts and again whenever it changes: the directory is scanned
// every 2 seconds, and a file whose size or modification time changed is
// read and re-applied if its content changed. A file holds one or more
// YAML documents separated by "---" lines, or JSON; List kinds (v1 List,
// ConfigMapList, …) are applied item by item. Each object goes through
// server-side apply with field manager "orch-manifests" and force, so the
// file wins over other managers of the same fields; a namespaced object
// without a namespace goes to "default". Kinds are found by discovery,
// which is refreshed when a kind is unknown: a CustomResourceDefinition in
// one file and its custom resources in another work once the definition
// is served.
//
// A file that does not parse applies nothing, and is read again when it
// changes; a file with an object that fails is tried again (every object
// of it) with backoff, 2 s doubling up to a minute. Every applied object gets a Normal "AppliedManifest" Event
// and every failure a Warning "ApplyManifestFailed" Event naming the file
// (and the line, for parse errors), all in kube-system.
//
// Deleting a file deletes nothing: the objects it created stay until they
// are deleted with kubectl.
//
// WriteDefaults writes orch's built-in manifests (package orch/manifests)
// into the directory before the Applier starts, leaving out those turned
// off with --disable NAME.
package manifests
