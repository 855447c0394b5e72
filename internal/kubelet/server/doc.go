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
// Authorization is upstream's mode Webhook: every authenticated request is
// put to the apiserver as a SubjectAccessReview (the caller's user, uid,
// groups and extra) for a subresource of this node: verb from the method
// (GET get, POST create, PUT update, PATCH patch, DELETE delete; any other
// method an empty verb, as upstream), resource nodes, name the node, and
// the subresource from the path: /stats stats, /metrics metrics, /logs
// log, /checkpoint checkpoint; /pods (and /runningpods) pods, /healthz
// healthz, /configz configz, /statusz statusz, each falling back to proxy
// when refused (KubeletFineGrainedAuthz, GA since 1.36); everything else,
// /exec, /attach, /portForward, /containerLogs and /run included, proxy.
// A refusal is 403 "Forbidden (user=U, verb=V, resource=nodes,
// subresource(s)=[…])"; a failed review is 500 and is not kept. Answers
// are kept five minutes when allowed and thirty seconds when refused. A
// server without a SubjectAccessReview client refuses every request.
//
// WebSocket clients (kubectl 1.30 on, when it talks to the kubelet
// directly) are translated to SPDY towards the runtime, as upstream's
// kubelet does with ExtendWebSocketsToKubelet; see internal/streamproxy.
package server
