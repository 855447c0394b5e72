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
// loses nothing. A live pod gets a sandbox (RunPodSandbox), then its init
// containers one at a time, in order, each run to completion (a failed one
// is retried under restartPolicy Always or OnFailure, and fails the pod
// under Never), then its containers; an image is pulled first when the
// runtime lacks it.
//
// Restarts follow upstream's computePodActions and container back-off: an
// exited container is created again (attempt restartCount+1) under
// restartPolicy Always, and under OnFailure when it failed. The first
// restart is at once; each later one waits 10 s, 20 s, 40 s … at most
// 5 min from the container's exit, the container's status Waiting with
// reason CrashLoopBackOff meanwhile, a BackOff event, and the pod requeued
// for when the back-off ends; a container that ran for 10 min starts over
// at once. The back-off is kept in memory (an agent restart forgets it, as
// upstream's). When a new attempt is created the attempts before the last
// exited one are removed: the runtime keeps one exited container per
// container, for lastState (and logs --previous).
//
// A pod being deleted has its containers stopped
// within its grace period, its sandboxes stopped and removed, and its
// object deleted (grace 0, UID precondition). A pod that finished
// (Succeeded or Failed) has its sandbox stopped and keeps its final status.
// Sandboxes of pods that are gone from the API are stopped and removed.
//
// Not yet done: sidecars (restartable init containers: a pod with any is
// not started; its status says why), a dead sandbox is not replaced,
// probes (a running container is ready), volumes, DNS configuration (the
// sandbox gets none, so the runtime's default resolv.conf applies), hooks.
//
//	w := pods.New(client, podconfig.Node{Name: "node-1", HostIPs: ips}, runtime, log)
//	err := w.Start(ctx) // blocks until ctx ends
package pods
