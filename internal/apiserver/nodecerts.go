package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/apiserver/authz"
)

// NodeRegistrationUnit prefixes the OrganizationalUnit of a node client
// certificate that names the registration it was issued for (the UID of
// the node's registration Secret).
const NodeRegistrationUnit = "orch-node-registration:"

// certificateBackdate is how far the CA backdates NotBefore (pki's clock
// skew allowance), plus a margin.
const certificateBackdate = time.Hour + time.Minute

// CheckCertificate refuses the client certificate of a node whose
// registration is gone: when a Node is deleted its registration Secret
// (Config.NodeRegistrationSecret) goes too, and the certificates issued for
// it stop being accepted, though the CA signed them. A certificate names its
// registration by UID (NodeRegistrationUnit); an older one without it must
// be newer than the registration. Other users' certificates pass.
func (s *Server) CheckCertificate(ctx context.Context, cert *x509.Certificate, user authz.User) error {
	node, isNode := authz.NodeName(user)
	if !isNode || s.cfg.NodeRegistrationSecret == nil {
		return nil
	}
	secret, err := s.registration(ctx, node)
	if err != nil {
		return err
	}
	for _, unit := range cert.Subject.OrganizationalUnit {
		if uid, ok := strings.CutPrefix(unit, NodeRegistrationUnit); ok {
			if uid != string(secret.UID) {
				return fmt.Errorf("the certificate of node %q was issued for an earlier registration of that name", node)
			}
			return nil
		}
	}
	if cert.NotBefore.Add(certificateBackdate).Before(secret.CreationTimestamp.Time) {
		return fmt.Errorf("the certificate of node %q is older than its registration", node)
	}
	return nil
}

// registration is node's registration Secret, from the watch cache, else
// from storage (the cache may not be filled yet).
func (s *Server) registration(ctx context.Context, node string) (*corev1.Secret, error) {
	rs := s.resources[corev1.SchemeGroupVersion.WithResource("secrets")]
	if rs == nil {
		return nil, fmt.Errorf("secrets are not served")
	}
	namespace, name := s.cfg.NodeRegistrationSecret(node)
	if o, ok := rs.cache.Get(rs.key(namespace, name)); ok {
		if secret, ok := o.Value.(*corev1.Secret); ok {
			return secret, nil
		}
	}
	obj, err := rs.get(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("node %q is not registered (its Node was deleted?): %w", node, err)
	}
	return obj.(*corev1.Secret), nil
}
