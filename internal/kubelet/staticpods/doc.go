// Package staticpods runs pods from manifest files on the node, without
// the API: the kubelet's static pods (upstream's file source), from
// data-dir/agent/pod-manifests/, and their mirror pods in the API.
//
// Source reads every *.yaml, *.yml and *.json file of its directory
// (dotfiles, other names and subdirectories are ignored) at start and then
// every 2 s, reading again only the files whose size, times or inode
// changed. Each file holds one v1 Pod, YAML or JSON, decoded strictly
// (unknown or duplicate fields are errors). A file that cannot be read or
// decoded is logged with its path and the reason and skipped; the other
// files' pods are served all the same. Each pod gets:
//
//   - the API's defaults (restartPolicy Always, dnsPolicy ClusterFirst,
//     imagePullPolicy by tag, probes' periods, …), as the apiserver gives
//     a pod it creates;
//   - the kubelet's, as upstream's: the name gets "-<node name>" appended,
//     the namespace defaults to "default", the UID is a hash of the pod,
//     the node name and the file path (so it stays the same across reads
//     and changes with the content), spec.nodeName is the node, a
//     toleration of every NoExecute taint, phase Pending, and the
//     annotations kubernetes.io/config.hash (the UID),
//     kubernetes.io/config.source ("file") and kubernetes.io/config.seen
//     (when this version was first read).
//
// A static pod is keyed namespace/name as pods of the API are; OnChange is
// told the key of each pod added, changed (its UID then changes too) or
// removed. A manifest that needs objects of the API (a service account,
// secrets, config maps, volume claims, …) is refused, as upstream does.
//
// Mirror keeps a mirror pod in the API for each static pod: a copy with
// the kubernetes.io/config.mirror annotation (the static pod's hash) owned
// by the Node. It replaces a mirror whose hash differs, deletes mirrors of
// this node whose static pod is gone, and never touches other pods.
//
//	src := staticpods.NewSource(filepath.Join(dataDir, "agent", "pod-manifests"), node, log)
//	src.OnChange(func(key string) { queue.Add(key) })
//	go src.Start(ctx)
//	<-src.Synced()
//	if static, ok := src.Get(ns, name); ok {
//		err := staticpods.NewMirror(client, node, log).Sync(ctx, static, mirrorFromLister)
//	}
//
// Differences from upstream: only *.yaml, *.yml and *.json files are read
// (upstream reads every file not starting with a dot); a file with more
// than one YAML document is refused (upstream reads the first); unknown
// fields are refused (upstream ignores them); changes are found by polling
// only (upstream also uses inotify); the UID hashes the pod's JSON
// (upstream hashes a dump of its internal type), so UIDs differ from
// upstream's for the same file; validation covers the name, namespace,
// containers, policies and API references (upstream runs the API's full
// validation; the rest is checked by the API when the mirror is created,
// and a pod refused there runs without a mirror).
package staticpods
