// Package server is the kubelet's HTTPS API on port 10250, the one the
// apiserver proxies pods/log, pods/exec, pods/attach, pods/portforward and
// nodes/proxy to, and metrics collectors scrape:
//
//	/healthz                                     ok
//	/pods                                        the node's pods (a v1 PodList)
//	/containerLogs/{ns}/{pod}/{container}        a container's CRI log (follow, previous, tailLines, …)
//	/exec/{ns}/{pod}[/{uid}]/{container}         CRI Exec, proxied to the runtime's streaming server
//	/attach/{ns}/{pod}[/{uid}]/{container}       CRI Attach, likewise
//	/portForward/{ns}/{pod}[/{uid}]              CRI PortForward, likewise
//	/stats/summary                               statsapi.Summary from CRI stats and /proc
//
// Authentication is upstream's with anonymous access off: a client
// certificate signed by the cluster CA (CN the user, O the groups), or a
// bearer token the apiserver accepts in a TokenReview (cached for two
// minutes); anything else gets 401.
//
// Authorization: upstream asks the apiserver with a SubjectAccessReview
// (nodes/proxy, nodes/log, nodes/stats …). orch has no authorization
// anywhere yet, so every authenticated user may use every endpoint.
//
// WebSocket clients (kubectl 1.30 on, when it talks to the kubelet
// directly) are translated to SPDY towards the runtime, as upstream's
// kubelet does with ExtendWebSocketsToKubelet; see internal/streamproxy.
package server
