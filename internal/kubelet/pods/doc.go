// Package pods holds the kubelet's pod workers: Workers watches the pods
// bound to its node and, for each, drives the container runtime (CRI)
// toward the pod's spec and writes what the runtime reports back to the
// pod's status, as upstream's kubelet does in its pod workers and status
// manager.
//
// Syncs are level-triggered: a pod's key (namespace/name) goes into a
// workqueue on every informer event, when a probe result changes, when the
// runtime's state of the pod changed (relist.go: one ListPodSandbox and one
// ListContainers a second, diffed against the previous relist, as
// upstream's PLEG), and for every pod every Resync (10 s). Each sync reads
// the runtime's state afresh (sandboxes and containers found by their
// io.kubernetes.pod.* labels), so a missed event or an agent restart loses
// nothing: running containers are adopted. Each sync is a plan and its
// execution (plan.go, execute.go): plan, a pure function, compares the pod
// with the runtime's state of it and what the kubelet knows (probe
// results, restart back-offs, the time) and returns actions (create the
// sandbox, create or start container C, wait in back-off until T, kill
// container C, …); the executor performs them through the runtime. A live
// pod gets its volumes
// (internal/kubelet/volumes), a sandbox (RunPodSandbox, with DNS per
// dnsPolicy), /etc/hosts, then its init containers one at a time, in
// order, each run to completion (a failed one is retried under
// restartPolicy Always or OnFailure, and fails the pod under Never) —
// except sidecars (restartPolicy Always on an init container), which keep
// running beside the regular containers once started (the next container
// waits for a sidecar's startup probe), restart whatever the pod's
// restartPolicy, count for the pod's readiness, and stop after the
// regular containers: on deletion, and once those completed for good.
// Then its containers, each followed by its postStart hook; an image is
// pulled first when the runtime lacks it, with upstream's pull back-off
// (ErrImagePull, then ImagePullBackOff). A sandbox that died (its pause
// process, a reboot) is replaced, as upstream's: what is left of the pod
// is stopped, a new sandbox made (attempt + 1, a SandboxChanged event),
// and the init containers run again in it; not under restartPolicy Never
// once containers ran.
//
// Restarts follow upstream's computePodActions and container back-off: an
// exited container is created again (attempt restartCount+1) under
// restartPolicy Always, and under OnFailure when it failed. The first
// restart is at once; each later one waits 10 s, 20 s, 40 s … at most
// 5 min from the container's exit, the container's status Waiting with
// reason CrashLoopBackOff meanwhile, a BackOff event, and the pod requeued
// for when the back-off ends; a container that ran for 10 min starts over
// at once. A container whose liveness or startup probe failed
// (internal/kubelet/prober) is stopped and restarts the same way;
// readiness and startup results go into the status. A running container
// whose spec changed (its image: upstream's container hash) is stopped
// and created again at once, whatever the restartPolicy. The back-off is kept
// in memory, in client-go's flowcontrol.Backoff (an agent restart forgets
// it, as upstream's). When a new
// attempt is created the attempts before the last exited one are removed:
// the runtime keeps one exited container per container, for lastState
// (with the termination message) and logs --previous.
//
// A pod being deleted has its regular containers stopped, all at once,
// then its sidecars, in reverse order, each after its preStop hook and within what is left of the grace period, its
// sandboxes stopped and removed, its volumes torn down, and its object
// deleted (grace 0, UID precondition). A pod that finished (Succeeded or
// Failed) has its sandbox stopped and its volumes torn down and keeps its
// final status. Sandboxes of pods that are gone from the API are stopped
// and removed, and pod directories nobody has are removed.
//
// Static pods (StaticPodDir, internal/kubelet/staticpods) run from their
// files; their status goes to their mirror pods in the API.
//
// Ephemeral containers (kubectl debug) are started once, after the
// regular ones, in the PID namespace of their target container when they
// name one, and never restarted; they count for neither the pod's phase
// nor its readiness.
//
// In-place resize (pods/resize) is in resize.go and allocation.go.
//
// Not yet done: eviction under node pressure. (A pod whose disk-backed emptyDir outgrew its sizeLimit is
// evicted: Failed, reason Evicted.)
//
//	w := pods.New(client, podconfig.Node{Name: "node-1", HostIPs: ips}, runtime, log)
//	err := w.Start(ctx) // blocks until ctx ends
package pods
