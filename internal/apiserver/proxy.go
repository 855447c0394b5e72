package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"

	"orch/internal/streamproxy"
)

// podProxyTransport reaches pods as upstream's apiserver does: plain HTTP,
// or HTTPS without checking the pod's certificate.
var podProxyTransport = sync.OnceValue(func() *http.Transport {
	return streamproxy.Transport(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
})

// proxyPath is what follows .../{name}/proxy in the request path ("" or
// starting with "/").
func proxyPath(r *http.Request, info requestInfo) string {
	marker := "/" + info.Name + "/proxy"
	path := r.URL.Path
	i := strings.Index(path, marker)
	if i < 0 {
		return ""
	}
	return path[i+len(marker):]
}

// serveProxy is nodes/proxy (to the node's kubelet, with the apiserver's
// kubelet client certificate), pods/proxy (to the pod's IP) and
// services/proxy (to a ready endpoint of the port). The name may carry a
// scheme and port: [scheme:]name[:port].
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	gr := schema.GroupResource{Resource: rs.res.Resource + "/proxy"}
	fail := func(err error) { s.respondError(w, r, err, gr, info.Name) }
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(info.Name)
	if !ok {
		fail(apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", strings.TrimSuffix(rs.res.Resource, "s"), info.Name)))
		return
	}
	// An empty path stays empty for pods and services: the proxy handler
	// then redirects GET and HEAD to .../proxy/, as upstream's.
	path := proxyPath(r, info)
	var loc *url.URL
	var transport *http.Transport
	switch rs.res.Resource {
	case "nodes":
		var err error
		nodePath := path
		if nodePath == "" {
			nodePath = "/"
		}
		if loc, err = s.kubeletLocation(r.Context(), name, nodePath, nil); err != nil {
			fail(err)
			return
		}
		if port != "" {
			host, kubeletPort, _ := net.SplitHostPort(loc.Host)
			if port != kubeletPort && isOwnAddress(host) {
				fail(apierrors.NewForbidden(gr, info.Name, fmt.Errorf("node %q is at an address of the apiserver's own host: only its kubelet port (%s) may be proxied to", name, kubeletPort)))
				return
			}
			loc.Host = net.JoinHostPort(host, port)
		}
		if scheme != "" {
			loc.Scheme = scheme
		}
		transport = s.kubeletBackendTransport()
	case "pods":
		pod, err := s.getPod(r, requestInfo{Namespace: info.Namespace, Name: name}, rs)
		if err != nil {
			fail(err)
			return
		}
		if port == "" {
			for _, c := range pod.Spec.Containers {
				if len(c.Ports) > 0 {
					port = fmt.Sprint(c.Ports[0].ContainerPort)
					break
				}
			}
		}
		ip := podIP(pod)
		if ip == nil || !ip.IsGlobalUnicast() {
			fail(apierrors.NewBadRequest("address not allowed"))
			return
		}
		host := ip.String()
		if port != "" {
			host = net.JoinHostPort(host, port)
		} else if ip.To4() == nil {
			host = "[" + host + "]"
		}
		if scheme == "" {
			scheme = "http"
		}
		loc, transport = &url.URL{Scheme: scheme, Host: host, Path: path}, podProxyTransport()
	case "services":
		hostPort, err := s.serviceEndpoint(r.Context(), rs, info.Namespace, name, port)
		if err != nil {
			fail(err)
			return
		}
		if scheme == "" {
			scheme = "http"
		}
		loc, transport = &url.URL{Scheme: scheme, Host: hostPort, Path: path}, podProxyTransport()
	default:
		fail(notImplemented(rs.res.Resource + "/proxy"))
		return
	}
	stripCredentials(r)
	// Wrapped as upstream's: HTML links in responses are rewritten to go
	// through the proxy, and X-Forwarded-* headers are set.
	h := proxy.NewUpgradeAwareHandler(loc, transport, true, false, proxyResponder{s, gr, info.Name})
	h.UseLocationHost = true
	h.RejectForwardingRedirects = true
	h.ServeHTTP(w, r)
}

func podIP(pod *corev1.Pod) net.IP {
	if len(pod.Status.PodIPs) > 0 {
		return net.ParseIP(pod.Status.PodIPs[0].IP)
	}
	return net.ParseIP(pod.Status.PodIP)
}

func (s *Server) kubeletBackendTransport() *http.Transport {
	s.cfg.KubeletClient.init()
	return s.cfg.KubeletClient.transport
}

// proxyResponder writes proxy errors as Status objects.
type proxyResponder struct {
	s    *Server
	gr   schema.GroupResource
	name string
}

func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := err.(apierrors.APIStatus); !ok {
		err = apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err))
	}
	p.s.respondError(w, r, err, p.gr, p.name)
}

// isOwnAddress is true when host is loopback or an address of this
// machine: nodes/proxy must not become a way to reach the server's other
// ports (etcd, the supervisor) with the apiserver's kubelet client
// certificate.
func isOwnAddress(host string) bool {
	ip := net.ParseIP(host)
	if ip == nil {
		return true // a name: it may resolve to anything, this host too
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
