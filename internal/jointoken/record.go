package jointoken

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"orch/internal/join"
	"orch/internal/pki"
)

// Key is where the cluster's Record is kept in etcd; like the bootstrap
// data it is outside /registry, so the apiserver never serves it.
const Key = "/orch/join-tokens"

// maxRetired bounds Record.Retired: older secrets are forgotten.
const maxRetired = 32

// Record is the cluster's current join tokens as etcd keeps them.
type Record struct {
	// Server and Agent are the full tokens.
	Server string `json:"server"`
	Agent  string `json:"agent"`
	// Retired are hashes (RetiredHash) of the secrets rotated away,
	// newest last, so that a server started with one of them is told
	// the token was rotated rather than silently put back.
	Retired []string `json:"retired,omitempty"`
}

// Secrets are the secrets of a Record's tokens.
func (r Record) Secrets() (server, agent string, err error) {
	if _, server, err = pki.ParseToken(r.Server); err != nil {
		return "", "", fmt.Errorf("the server token: %w", err)
	}
	if _, agent, err = pki.ParseToken(r.Agent); err != nil {
		return "", "", fmt.Errorf("the agent token: %w", err)
	}
	return server, agent, nil
}

// check says whether r holds a server token and an agent token with
// different secrets.
func (r Record) check() error {
	server, agent, err := r.Secrets()
	if err != nil {
		return err
	}
	if t, _ := pki.ParseJoinToken(r.Server); t.User != pki.ServerTokenUser {
		return errors.New("the server token is not a ::server: token")
	}
	if t, _ := pki.ParseJoinToken(r.Agent); t.User != pki.AgentTokenUser {
		return errors.New("the agent token is not a ::node: token")
	}
	if server == agent {
		return errors.New("the agent token's secret is the server token's")
	}
	return nil
}

// isRetired reports whether secret was rotated away.
func (r Record) isRetired(secret string) bool { return slices.Contains(r.Retired, RetiredHash(secret)) }

// retire adds secret to r.Retired, forgetting the oldest beyond maxRetired.
func (r *Record) retire(secret string) {
	h := RetiredHash(secret)
	r.Retired = append(slices.DeleteFunc(slices.Clone(r.Retired), func(s string) bool { return s == h }), h)
	if len(r.Retired) > maxRetired {
		r.Retired = r.Retired[len(r.Retired)-maxRetired:]
	}
}

// RetiredHash is how Record.Retired names a secret: its hex SHA-256.
func RetiredHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// recordSecret is the key material a Record is sealed with: a hash of the
// cluster CA's private key (the PEM file's bytes, which every server has
// the same copy of), never the key itself.
func recordSecret(caKeyPEM []byte) string {
	sum := sha256.Sum256(append([]byte("orch join tokens record\x00"), caKeyPEM...))
	return hex.EncodeToString(sum[:])
}

// SealRecord encrypts r for etcd with a key derived from the cluster CA's
// private key.
func SealRecord(caKeyPEM []byte, r Record) ([]byte, error) {
	if len(caKeyPEM) == 0 {
		return nil, errors.New("seal the join tokens: the cluster CA key is empty")
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("seal the join tokens: %w", err)
	}
	plain, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return join.Seal(recordSecret(caKeyPEM), plain)
}

// OpenRecord reverses SealRecord. It fails when the record was sealed
// with another CA key (this server's data-dir/server/tls/ca.key is not
// the cluster's) or altered.
func OpenRecord(caKeyPEM []byte, sealed []byte) (Record, error) {
	plain, err := join.Open(recordSecret(caKeyPEM), sealed)
	if err != nil {
		return Record{}, fmt.Errorf("cannot open the cluster's join tokens with this server's CA key (%w): "+
			"data-dir/server/tls/ca.key must be the cluster's", err)
	}
	var r Record
	if err := json.Unmarshal(plain, &r); err != nil {
		return Record{}, fmt.Errorf("the cluster's join tokens are unreadable: %w", err)
	}
	if err := r.check(); err != nil {
		return Record{}, fmt.Errorf("the cluster's join tokens: %w", err)
	}
	return r, nil
}
