// Package prober runs the liveness, readiness and startup probes of the
// kubelet's running containers, as upstream's pkg/kubelet/prober does, and
// keeps their results for the pod workers.
//
// The pod workers call Sync on every sync of a pod with the running
// instance (ID, start time) of each container. Sync gives every probe of a
// running container a worker goroutine and stops the workers of
// containers that exited or run as a new instance; Remove stops a pod's
// workers when the pod is gone. A worker probes first after
// initialDelaySeconds, then every periodSeconds, each attempt bounded by
// timeoutSeconds, and sets its result after successThreshold successes or
// failureThreshold failures in a row. A result that changes calls
// onChange with the pod's UID, so that the pod is synced again.
//
// Results, by container ID: Ready is false until the readiness probe
// succeeded (true without one), Started false until the startup probe
// succeeded (true without one), LivenessFailed true once the liveness or
// startup probe failed: the caller then kills the container, with the
// probe's LivenessGracePeriod if set, and emits "Killing". Liveness and
// readiness probes wait for the startup probe to succeed; a startup probe
// stops once it succeeded or failed, and a failed liveness probe stops
// until the container's next instance. Once a pod is being deleted, its
// liveness and startup probes stop.
//
// Handlers: exec runs through Runtime.ExecSync (exit code 0 is success, a
// timeout a failure "command timed out"); httpGet sends a GET (HTTPS
// without verification) to host (default the pod IP) and port (a number
// or the name of a container port), where 2xx is success, 3xx after
// following redirects to the same host only is success with a warning,
// anything else a failure "HTTP probe failed with statuscode: N";
// tcpSocket opens a connection; grpc calls grpc.health.v1.Health/Check.
// Events are upstream's: Warning "Unhealthy" "Liveness probe failed: …",
// "Readiness probe errored and resulted in unknown state: …", and Warning
// "ProbeWarning" "Readiness probe warning: …". The httpGet protocol
// (HTTP/2 cleartext) and the grpc TLS mode, both alpha and off by default
// upstream, are ignored.
//
//	m := prober.NewManager(runtime, recorder, func(uid types.UID) { queue.Add(keyOf(uid)) }, log)
//	m.Sync(pod, podIP, map[string]prober.Running{"app": {ID: id, StartedAt: started}})
//	if m.LivenessFailed(id) { /* kill and restart the container */ }
//	status.Ready, status.Started = m.Ready(id), m.Started(id)
//	m.Remove(pod.UID) // the pod is gone
package prober
