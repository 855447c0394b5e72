package join

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orch/internal/fsutil"
	"orch/internal/pki"
)

// File names in data-dir/agent and data-dir/agent/tls.
const (
	CACertFile         = "ca.crt"
	ClientCertFile     = "client-kubelet.crt"
	ClientKeyFile      = "client-kubelet.key"
	ServingCertFile    = "serving-kubelet.crt"
	ServingKeyFile     = "serving-kubelet.key"
	ClusterFile        = "cluster.json" // the Cluster settings, next to the certificates
	KubeconfigFile     = "kubelet.kubeconfig"
	NodePasswordFile   = "node-password"
	nodePasswordLength = 32 // bytes of randomness, hex-encoded
	// ComponentsFile lists, one a line, the component users the server
	// issued certificates for (empty for a server of an older version);
	// each one's files are ComponentCertFile(user) and ComponentKeyFile(user).
	ComponentsFile = "components"
)

// ComponentCertFile is the file of a component user's client certificate
// in data-dir/agent/tls: client-kube-proxy.crt for system:kube-proxy.
func ComponentCertFile(user string) string {
	return "client-" + strings.TrimPrefix(user, "system:") + ".crt"
}

// ComponentKeyFile is the file of a component user's private key.
func ComponentKeyFile(user string) string {
	return "client-" + strings.TrimPrefix(user, "system:") + ".key"
}

// paths are the agent's files.
type paths struct {
	agent, tls                                                         string
	ca, clientCert, clientKey, servingCert, servingKey, kubeconfig, pw string
	cluster, components                                                string
}

func (p paths) componentCert(user string) string {
	return filepath.Join(p.tls, ComponentCertFile(user))
}
func (p paths) componentKey(user string) string { return filepath.Join(p.tls, ComponentKeyFile(user)) }

func pathsFor(dataDir string) paths {
	agent := filepath.Join(dataDir, "agent")
	dir := filepath.Join(agent, "tls")
	return paths{
		agent: agent, tls: dir,
		ca:         filepath.Join(dir, CACertFile),
		clientCert: filepath.Join(dir, ClientCertFile), clientKey: filepath.Join(dir, ClientKeyFile),
		servingCert: filepath.Join(dir, ServingCertFile), servingKey: filepath.Join(dir, ServingKeyFile),
		kubeconfig: filepath.Join(agent, KubeconfigFile),
		pw:         filepath.Join(agent, NodePasswordFile),
		cluster:    filepath.Join(dir, ClusterFile),
		components: filepath.Join(dir, ComponentsFile),
	}
}

func (p paths) mkdirs() error {
	if err := os.MkdirAll(p.tls, 0o700); err != nil {
		return fmt.Errorf("orch agent: create %q: %w (check the permissions of --data-dir, or run as root)", p.tls, err)
	}
	return nil
}

// nodePassword returns the agent's node password, creating it (mode 0600)
// on first use. The server remembers a hash of it for the node name, so it
// must survive restarts: removing it makes the node name unusable until
// the Node (or its password secret) is deleted.
func (p paths) nodePassword() (string, error) {
	data, err := os.ReadFile(p.pw)
	if err == nil {
		if pw := strings.TrimSpace(string(data)); pw != "" {
			return pw, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("orch agent: read the node password %q: %w (check the permissions of --data-dir)", p.pw, err)
	}
	b := make([]byte, nodePasswordLength)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("orch agent: generate a node password: %w", err)
	}
	pw := hex.EncodeToString(b)
	if err := fsutil.WriteFileAtomic(p.pw, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("orch agent: store the node password: %w", err)
	}
	return pw, nil
}

// loadOrNewKey reads the key in path, or makes a new one (written only with
// the certificate issued for it).
func loadOrNewKey(path string) (keyPair, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		if signer, err := pki.ParsePrivateKeyPEM(data); err == nil {
			return keyPair{signer, data}, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return keyPair{}, fmt.Errorf("orch agent: read %q: %w (check the permissions of --data-dir)", path, err)
	}
	return newKeyPair()
}

// store writes the CA, the keys (mode 0600) and then the certificates, each
// atomically; a crash in between leaves a key without its certificate,
// which the next Join notices and repairs.
func (p paths) store(caPEM []byte, issued *issuedCerts) error {
	cluster, err := json.Marshal(issued.cluster)
	if err != nil {
		return err
	}
	type file struct {
		path string
		data []byte
		mode os.FileMode
	}
	keys := []file{{p.clientKey, issued.clientKey.pem, 0o600}, {p.servingKey, issued.servingKey.pem, 0o600}}
	certs := []file{{p.clientCert, issued.clientCertPEM, 0o644}, {p.servingCert, issued.servingCertPEM, 0o644}}
	var users []string
	for _, user := range ComponentUsers() {
		if cc, ok := issued.components[user]; ok {
			users = append(users, user)
			keys = append(keys, file{p.componentKey(user), cc.key.pem, 0o600})
			certs = append(certs, file{p.componentCert(user), cc.certPEM, 0o644})
		}
	}
	list := strings.Join(users, "\n")
	if list != "" {
		list += "\n"
	}
	files := append([]file{{p.ca, caPEM, 0o644}}, keys...)
	files = append(files, certs...)
	files = append(files, file{p.cluster, cluster, 0o644})
	if issued.componentsKnown {
		// The list last: it names only files that are in place. Without
		// one (certificates an agent of an older version stored, whose
		// client certificate alone was renewed), the next start still
		// asks the server for the components at once.
		files = append(files, file{p.components, []byte(list), 0o644})
	}
	for _, f := range files {
		if err := fsutil.WriteFileAtomic(f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("orch agent: store the node certificates: %w", err)
		}
	}
	return nil
}

// loadStored returns the stored credentials if they were issued by the
// token's CA for this node (name, hostname and IPs) and have not expired.
// Certificates close to expiry are still used: the Renewer replaces them,
// and a node keeps working while the server is away.
func loadStored(c checked) (*Credentials, error) {
	caPEM, err := os.ReadFile(c.paths.ca)
	if err != nil {
		return nil, err
	}
	if pki.CAHash(caPEM) != c.caHash {
		return nil, errors.New("the stored CA is not the one the token names")
	}
	issued := &issuedCerts{}
	read := func(path string) []byte {
		data, e := os.ReadFile(path)
		err = errors.Join(err, e)
		return data
	}
	issued.clientCertPEM, issued.servingCertPEM = read(c.paths.clientCert), read(c.paths.servingCert)
	issued.clientKey.pem, issued.servingKey.pem = read(c.paths.clientKey), read(c.paths.servingKey)
	if err != nil {
		return nil, err
	}
	if issued.clientKey.signer, err = pki.ParsePrivateKeyPEM(issued.clientKey.pem); err != nil {
		return nil, err
	}
	if issued.servingKey.signer, err = pki.ParsePrivateKeyPEM(issued.servingKey.pem); err != nil {
		return nil, err
	}
	if issued.components, issued.componentsKnown, err = loadComponents(c.paths); err != nil {
		return nil, err
	}
	if _, err := checkIssued(c, caPEM, issued); err != nil {
		return nil, err
	}
	issued.cluster = DefaultCluster // what agents stored before the server sent it
	if data, err := os.ReadFile(c.paths.cluster); err == nil {
		if err := json.Unmarshal(data, &issued.cluster); err != nil {
			return nil, fmt.Errorf("%s: %w", c.paths.cluster, err)
		}
		issued.cluster = withDefaults(issued.cluster)
	}
	creds, err := newCredentials(c, caPEM, issued)
	if err != nil {
		return nil, err
	}
	// The kubeconfig may be missing or older than the certificates.
	if err := creds.writeKubeconfig(); err != nil {
		return nil, err
	}
	return creds, nil
}

// loadComponents reads the stored component certificates and keys;
// known is false when an agent of an older version stored the node's
// certificates (no ComponentsFile).
func loadComponents(p paths) (components map[string]componentCert, known bool, err error) {
	list, err := os.ReadFile(p.components)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	components = map[string]componentCert{}
	for _, user := range strings.Fields(string(list)) {
		if !IsComponentUser(user) {
			return nil, false, fmt.Errorf("%s names %q, which is not a component of the agent", p.components, user)
		}
		var cc componentCert
		if cc.certPEM, err = os.ReadFile(p.componentCert(user)); err != nil {
			return nil, false, err
		}
		if cc.key.pem, err = os.ReadFile(p.componentKey(user)); err != nil {
			return nil, false, err
		}
		if cc.key.signer, err = pki.ParsePrivateKeyPEM(cc.key.pem); err != nil {
			return nil, false, err
		}
		components[user] = cc
	}
	return components, true, nil
}

// liveCerts are issued certificates checked and ready for TLS.
type liveCerts struct {
	client, serving tls.Certificate
	components      map[string]*tls.Certificate
}

// checkIssued checks that every certificate is for its key, signed by the
// CA for its usage and valid now; that the node's name this node (the
// serving one exactly its DNS names and IPs); and that each component's
// is for its user with no groups. It returns them as tls.Certificates.
func checkIssued(c checked, caPEM []byte, issued *issuedCerts) (*liveCerts, error) {
	pool, err := pki.CAPoolFromPEM(caPEM)
	if err != nil {
		return nil, err
	}
	now := c.Clock.Now()
	check := func(what string, certPEM []byte, key keyPair, usage x509.ExtKeyUsage, user string, groups []string) (tls.Certificate, error) {
		return checkCert(pool, now, what, certPEM, key, usage, user, groups)
	}
	live := &liveCerts{components: map[string]*tls.Certificate{}}
	node := NodeUser(c.NodeName)
	if live.client, err = check("client", issued.clientCertPEM, issued.clientKey, x509.ExtKeyUsageClientAuth, node, []string{NodesGroup}); err != nil {
		return nil, err
	}
	if live.serving, err = check("serving", issued.servingCertPEM, issued.servingKey, x509.ExtKeyUsageServerAuth, node, []string{NodesGroup}); err != nil {
		return nil, err
	}
	leaf := live.serving.Leaf
	if !sameStrings(leaf.DNSNames, c.servingDNSNames()) || !sameIPs(leaf.IPAddresses, c.NodeIPs) {
		return nil, fmt.Errorf("serving certificate names %v %v, the node is %v %v", leaf.DNSNames, leaf.IPAddresses, c.servingDNSNames(), c.NodeIPs)
	}
	for user, cc := range issued.components {
		cert, err := check(user, cc.certPEM, cc.key, x509.ExtKeyUsageClientAuth, user, nil)
		if err != nil {
			return nil, err
		}
		if len(cert.Leaf.DNSNames)+len(cert.Leaf.IPAddresses) > 0 {
			return nil, fmt.Errorf("%s certificate names hosts %v %v; a component's client certificate names none", user, cert.Leaf.DNSNames, cert.Leaf.IPAddresses)
		}
		live.components[user] = &cert
	}
	return live, nil
}

// checkClient checks the node's client certificate alone, as
// checkIssued does: for key, signed by the CA for client auth, valid now,
// CN=system:node:NAME and O=system:nodes.
func checkClient(c checked, caPEM, certPEM []byte, key keyPair) (tls.Certificate, error) {
	pool, err := pki.CAPoolFromPEM(caPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	return checkCert(pool, c.Clock.Now(), "client", certPEM, key, x509.ExtKeyUsageClientAuth, NodeUser(c.NodeName), []string{NodesGroup})
}

// checkCert checks that certPEM is for key, signed by pool's CA for usage,
// valid at now, and for user in exactly groups.
func checkCert(pool *x509.CertPool, now time.Time, what string, certPEM []byte, key keyPair, usage x509.ExtKeyUsage, user string, groups []string) (tls.Certificate, error) {
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s certificate: %w", what, err)
	}
	if !pki.KeyMatches(key.signer, cert) {
		return tls.Certificate{}, fmt.Errorf("%s certificate is not for its key", what)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s certificate: %w", what, err)
	}
	if cert.Subject.CommonName != user || !slices.Equal(cert.Subject.Organization, groups) {
		return tls.Certificate{}, fmt.Errorf("%s certificate is for %q in %v, not %q in %v", what, cert.Subject.CommonName, cert.Subject.Organization, user, groups)
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key.signer, Leaf: cert}, nil
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func sameIPs(a, b []net.IP) bool {
	str := func(ips []net.IP) []string {
		var out []string
		for _, ip := range ips {
			out = append(out, ip.String())
		}
		return out
	}
	return sameStrings(str(a), str(b))
}
