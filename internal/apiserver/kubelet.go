package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/streamproxy"
)

// DefaultKubeletPort is the port of a node's kubelet when its Node does not
// say (status.daemonEndpoints.kubeletEndpoint.Port).
const DefaultKubeletPort = 10250

// KubeletClientConfig is how the apiserver reaches the kubelets it proxies
// pods/log, exec, attach, portforward and nodes/proxy to.
type KubeletClientConfig struct {
	// TLS verifies the kubelets' serving certificates (the cluster CA) and
	// presents the apiserver's kubelet client certificate
	// (system:kube-apiserver-kubelet-client in system:masters, as kubeadm
	// names it).
	TLS *tls.Config
	// Tunnel connects to node's kubelet through the tunnel the node's
	// agent opened (internal/tunnel), ok false when it has none; nil:
	// kubelets are always dialed.
	Tunnel func(ctx context.Context, node string) (conn net.Conn, ok bool, err error)

	once      sync.Once
	transport *http.Transport
	insecure  *http.Transport // for pods/log insecureSkipTLSVerifyBackend

	mu sync.Mutex
	// nodeAt is the node each kubelet address was last resolved for.
	nodeAt map[string]string
}

func (c *KubeletClientConfig) init() {
	c.once.Do(func() {
		c.transport = streamproxy.Transport(c.TLS)
		c.transport.DialContext = c.dial
		insecure := c.TLS.Clone()
		insecure.InsecureSkipVerify = true
		c.insecure = streamproxy.Transport(insecure)
		c.insecure.DialContext = c.dial
	})
}

// kubeletDialer dials kubelets that have no tunnel.
var kubeletDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// dial connects to the kubelet at addr: through its node's tunnel when
// the node has one, else directly. The TLS above it is the same either
// way, so the kubelet's serving certificate is checked end to end.
func (c *KubeletClientConfig) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.Tunnel != nil {
		c.mu.Lock()
		node := c.nodeAt[addr]
		c.mu.Unlock()
		if node != "" {
			if conn, ok, err := c.Tunnel(ctx, node); ok {
				return conn, err
			}
		}
	}
	return kubeletDialer.DialContext(ctx, network, addr)
}

// resolved remembers that addr is node's kubelet.
func (c *KubeletClientConfig) resolved(addr, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodeAt == nil {
		c.nodeAt = map[string]string{}
	}
	c.nodeAt[addr] = node
}

// kubeletAddressTypes is the order node addresses are tried in (k3s's
// --kubelet-preferred-address-types).
var kubeletAddressTypes = []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName}

// kubeletHost returns host:port of node's kubelet.
func kubeletHost(node *corev1.Node) (string, error) {
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	for _, t := range kubeletAddressTypes {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(port)), nil
			}
		}
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: %v", node.Status.Addresses)
}

// kubeletLocation is https://<node's kubelet><path>?<query>.
func (s *Server) kubeletLocation(ctx context.Context, nodeName, path string, query url.Values) (*url.URL, error) {
	if s.cfg.KubeletClient == nil || s.cfg.KubeletClient.TLS == nil {
		return nil, notImplemented("reaching kubelets (the apiserver was started without a kubelet client certificate)")
	}
	rs := s.resources[corev1.SchemeGroupVersion.WithResource("nodes")]
	if rs == nil {
		return nil, fmt.Errorf("nodes are not served")
	}
	obj, err := rs.get(ctx, "", nodeName)
	if isNotFound(err) {
		return nil, apierrors.NewNotFound(rs.gr, nodeName)
	}
	if err != nil {
		return nil, err
	}
	host, err := kubeletHost(obj.(*corev1.Node))
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q: %v", nodeName, err))
	}
	s.cfg.KubeletClient.resolved(host, nodeName)
	return &url.URL{Scheme: "https", Host: host, Path: path, RawQuery: query.Encode()}, nil
}

// kubeletBackend is the streamproxy backend for loc.
func (s *Server) kubeletBackend(loc *url.URL) streamproxy.Backend {
	s.cfg.KubeletClient.init()
	return streamproxy.Backend{Location: loc, TLS: s.cfg.KubeletClient.TLS, Log: s.log, Dial: s.cfg.KubeletClient.dial}
}
