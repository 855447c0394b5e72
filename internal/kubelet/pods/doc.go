// Package pods holds the kubelet's pod workers: Workers watches the pods
// bound to its node and, for each, drives the container runtime (CRI)
// toward the pod's spec and writes what the runtime reports back to the
// pod's status, as upstream's kubelet does in its pod workers and status
// manager.
//
// Syncs are level-triggered: a pod's key (namespace/name) goes into a
// workqueue on every informer event and on every relist tick, and each
// sync reads the runtime's state afresh (sandboxes and containers found by
// their io.kubernetes.pod.* labels), so a missed event or an agent restart
// loses nothing. A live pod gets a sandbox (RunPodSandbox), then each of
// its containers is created and started once, its image pulled first when
// the runtime lacks it. A pod being deleted has its containers stopped
// within its grace period, its sandboxes stopped and removed, and its
// object deleted (grace 0, UID precondition). A pod that finished
// (Succeeded or Failed) has its sandbox stopped and keeps its final status.
// Sandboxes of pods that are gone from the API are stopped and removed.
//
// Not yet done: init containers (a pod with any is not started; its status
// says why), restarts and back-off (an exited container stays exited),
// probes (a running container is ready), volumes, DNS configuration (the
// sandbox gets none, so the runtime's default resolv.conf applies), hooks.
//
//	w := pods.New(client, podconfig.Node{Name: "node-1", HostIPs: ips}, runtime, log)
//	err := w.Start(ctx) // blocks until ctx ends
package pods
