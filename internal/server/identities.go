package server

import (
	"fmt"

	"k8s.io/client-go/rest"

	"orch/internal/pki"
)

// identities issues the client configurations orch's in-process
// components use: each its own user, with a client certificate made in
// memory at start (as long-lived as the CA, never written to disk), so that
// every request they make is authorized under the bootstrap policy, never
// as system:masters.
type identities struct {
	loopback *rest.Config // the apiserver's own (system:apiserver in system:masters)
	bundle   *pki.Bundle
}

// config returns a copy of the loopback configuration that authenticates
// as user in groups.
func (i identities) config(user string, groups ...string) (*rest.Config, error) {
	cert, key, err := i.bundle.IssueClientCert(user, groups, pki.CAValidity)
	if err != nil {
		return nil, fmt.Errorf("issue the client certificate of %s: %w", user, err)
	}
	c := rest.CopyConfig(i.loopback)
	c.CertData, c.KeyData = cert, key
	c.UserAgent = c.UserAgent + " (" + user + ")"
	return c, nil
}
