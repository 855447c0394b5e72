package server

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"

	"orch/internal/tunnel"
)

// tunnels takes the tunnels agents open to this server (internal/tunnel)
// and reaches their kubelets through them.
type tunnels struct{ reg *tunnel.Registry }

// wrap answers tunnel.Path and hands every other request to next. It
// stands outside the request timeout: a tunnel lasts as long as the agent.
func (t tunnels) wrap(next http.Handler) http.Handler {
	open := t.reg.Handler(nodeOfCertificate)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tunnel.Path {
			open.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dial is the apiserver's KubeletClientConfig.Tunnel.
func (t tunnels) dial(ctx context.Context, node string) (net.Conn, bool, error) {
	if !t.reg.Has(node) {
		return nil, false, nil
	}
	conn, err := t.reg.Dial(ctx, node)
	return conn, true, err
}

// nodeOfCertificate is the node whose client certificate (verified against
// the cluster CA: CN system:node:NAME in O system:nodes) the request
// presented.
func nodeOfCertificate(r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	name, ok := strings.CutPrefix(leaf.Subject.CommonName, "system:node:")
	return name, ok && name != "" && slices.Contains(leaf.Subject.Organization, "system:nodes")
}
