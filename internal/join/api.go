package join

import (
	"slices"
	"strings"
)

// The HTTP API an orch server serves, on its apiserver port, for agents
// that join. Both ends use these types; the server imports them from here.
const (
	// CACertsPath answers GET, without authentication, with the cluster
	// CA certificate (PEM), exactly the bytes whose SHA-256 is in the token.
	CACertsPath = "/cacerts"
	// CertificatesPath answers POST of a CertificatesRequest (JSON) with a
	// CertificatesResponse. The caller authenticates with HTTP basic auth,
	// user TokenUser and as password the secret of the agent token or of
	// the server token.
	CertificatesPath = "/v1-orch/node-certificates"
	// TokenUser is the basic auth user name of CertificatesPath.
	TokenUser = "node"
)

// The identity a node's kubelet has, as upstream.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// NodeUser is the user name of node name's kubelet: system:node:NAME.
func NodeUser(name string) string { return NodeUserPrefix + name }

// The identities of the agent's components that do not act as the node:
// every node's copy of a component is the same user (CN=user, no groups),
// as upstream's kube-proxy is. A server signs client certificates for
// these users only.
const (
	// KubeProxyUser is the Service proxy (internal/proxy).
	KubeProxyUser = "system:kube-proxy"
	// DNSUser is the cluster DNS (internal/dns).
	DNSUser = "system:orch-dns"
	// NetworkUser is the pod network's routes between nodes
	// (internal/network's Router).
	NetworkUser = "system:orch-network"
	// IngressUser is the built-in Ingress controller (internal/ingress).
	IngressUser = "system:orch-ingress"
	// LocalPathUser removes the directories of released local-path
	// volumes (internal/localpath).
	LocalPathUser = "system:orch-local-path"
)

// ComponentUsers are the users of the agent's components, in a fixed order.
func ComponentUsers() []string {
	return []string{KubeProxyUser, DNSUser, NetworkUser, IngressUser, LocalPathUser}
}

// IsComponentUser reports whether user is one of ComponentUsers.
func IsComponentUser(user string) bool {
	return slices.Contains(ComponentUsers(), user)
}

// Node password secrets: the first agent that joins as NAME stores a hash of
// its node password in the Secret kube-system/NAME.node-password.orch; a later
// join as NAME must present the same password.
const (
	PasswordSecretNamespace = "kube-system"
	PasswordSecretSuffix    = ".node-password.orch"
	// PasswordSecretLabel marks those secrets (value "true").
	PasswordSecretLabel = "orch.io/node-password"
	// PasswordHashKey is the key of the hash in the secret's data.
	PasswordHashKey = "hash"
)

// PasswordSecretName is the name of node name's password secret.
func PasswordSecretName(node string) string { return node + PasswordSecretSuffix }

// NodeFromPasswordSecret returns the node a password secret name belongs to.
func NodeFromPasswordSecret(secret string) (string, bool) {
	node, ok := strings.CutSuffix(secret, PasswordSecretSuffix)
	return node, ok && node != ""
}

// CertificatesRequest is what an agent sends to CertificatesPath.
type CertificatesRequest struct {
	// NodeName is the Node the agent registers as.
	NodeName string `json:"nodeName"`
	// Hostname and NodeIPs are what the serving certificate covers.
	Hostname string   `json:"hostname"`
	NodeIPs  []string `json:"nodeIPs,omitempty"`
	// NodePassword proves that a later join of NodeName is the same agent.
	NodePassword string `json:"nodePassword"`
	// ClientCSR asks for CN=system:node:NAME, O=system:nodes and no SANs.
	ClientCSR string `json:"clientCSR"`
	// ServingCSR asks for CN=system:node:NAME, O=system:nodes and the
	// hostname, the node name and NodeIPs as SANs (no others).
	ServingCSR string `json:"servingCSR"`
	// ComponentCSRs ask, by user (one of ComponentUsers), for client
	// certificates CN=user with no groups and no SANs. A server of an
	// older version ignores them.
	ComponentCSRs map[string]string `json:"componentCSRs,omitempty"`
}

// CertificatesResponse carries PEM certificates signed by the cluster CA.
type CertificatesResponse struct {
	CA                 string `json:"ca"`
	ClientCertificate  string `json:"clientCertificate"`
	ServingCertificate string `json:"servingCertificate"`
	// ComponentCertificates answer ComponentCSRs, by user. A server of an
	// older version sends none: the agent's components then act as the
	// node.
	ComponentCertificates map[string]string `json:"componentCertificates,omitempty"`
	// Cluster is what the node's kubelet must agree on with the server.
	Cluster Cluster `json:"cluster"`
}

// Cluster holds the cluster-wide settings a kubelet needs.
type Cluster struct {
	// DNS is the cluster DNS Service's IP (the server's --cluster-dns).
	DNS string `json:"dns"`
	// Domain is the cluster's DNS domain (--cluster-domain).
	Domain string `json:"domain"`
	// ClusterCIDR holds every pod IP (--cluster-cidr): the agent routes it
	// between nodes and masquerades what leaves it.
	ClusterCIDR string `json:"clusterCIDR"`
	// ServiceCIDR holds every ClusterIP (--service-cidr).
	ServiceCIDR string `json:"serviceCIDR"`
}

// DefaultCluster is what a server that sends no settings means.
var DefaultCluster = Cluster{DNS: "10.43.0.10", Domain: "cluster.local", ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16"}
