// Package streamproxy proxies the streaming requests of the Kubernetes API
// — exec, attach and port-forward — from a client to the server that runs
// them: the apiserver to a node's kubelet, the kubelet to the container
// runtime's streaming server.
//
// Both hops speak SPDY/3.1 upgrades, which Handler passes through with
// apimachinery's UpgradeAwareHandler. Clients from kubectl 1.30 on ask for
// WebSockets first, as upstream's apiserver 1.37 does, so Handler answers
// them itself:
//
//   - exec and attach asked with the v5.channel.k8s.io protocol are
//     translated: the client's WebSocket channels become the streams of a
//     SPDY remotecommand session towards the backend (client-go's SPDY
//     executor), and the exit status is written on the error channel;
//   - port-forward asked with the SPDY/3.1+portforward.k8s.io protocol is
//     tunnelled: the backend's SPDY upgrade is made first, then the client's
//     WebSocket carries the SPDY frames as binary messages.
//
// Any other upgrade (SPDY, or older WebSocket protocols) is proxied as is.
package streamproxy
