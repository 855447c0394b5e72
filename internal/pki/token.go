package pki

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"orch/internal/fsutil"
)

// Sentinel errors of the join token; test them with errors.Is.
var (
	// ErrInvalidToken means a token is neither of the form
	// K10<sha256 of the CA>::<user>:<secret> nor a usable passphrase.
	ErrInvalidToken = errors.New("invalid join token")
	// ErrCAHashMismatch means a server's CA is not the one the token names.
	ErrCAHashMismatch = errors.New("the server's CA certificate does not match the join token")
)

// The users of a full token: the server token joins servers and agents;
// the agent token only agents.
const (
	ServerTokenUser = "server"
	AgentTokenUser  = "node"
)

const (
	tokenPrefix = "K10"
	// secretBytes random bytes make the 32 hex characters of a new secret.
	secretBytes = 16
)

// tokenForm is how a token should look, quoted in errors.
const tokenForm = "K10<64 hex characters>::server:<secret> (or ::node:<secret> for an agent token)"

// JoinToken is a parsed join token: the full form K10<CA hash>::<user>:<secret>,
// or a bare passphrase (no CA hash, no user), which a joining agent or
// server can only trust the server's CA on first use with.
type JoinToken struct {
	// CAHash is the lower-case hex SHA-256 of the cluster CA; "" for a
	// passphrase.
	CAHash string
	// User is ServerTokenUser or AgentTokenUser; "" for a passphrase.
	User string
	// Secret is what the server checks.
	Secret string
}

// Passphrase reports whether t is a bare passphrase, without a CA hash.
func (t JoinToken) Passphrase() bool { return t.CAHash == "" }

// CAHash returns the hex SHA-256 of the CA certificate file's bytes, the part
// of the token between K10 and "::".
func CAHash(caCertPEM []byte) string {
	sum := sha256.Sum256(caCertPEM)
	return hex.EncodeToString(sum[:])
}

// FormatToken builds a server token from a CA hash and a secret.
func FormatToken(caHash, secret string) string { return formatToken(caHash, ServerTokenUser, secret) }

// FormatAgentToken builds an agent token from a CA hash and a secret.
func FormatAgentToken(caHash, secret string) string {
	return formatToken(caHash, AgentTokenUser, secret)
}

func formatToken(caHash, user, secret string) string {
	return tokenPrefix + caHash + "::" + user + ":" + secret
}

// ParseToken splits a full token K10<caHash>::<user>:<secret> (server or
// agent) into its CA hash (lower-case hex) and secret. Surrounding white
// space is ignored. A passphrase is refused: use ParseJoinToken.
func ParseToken(token string) (caHash, secret string, err error) {
	t, err := ParseJoinToken(token)
	if err == nil && t.Passphrase() {
		err = fmt.Errorf("%w: it must start with %q and look like %s", ErrInvalidToken, tokenPrefix, tokenForm)
	}
	return t.CAHash, t.Secret, err
}

// ParseJoinToken parses a full token or a passphrase. Surrounding white
// space is ignored. A token that starts with K10 must be a whole full
// token; anything else is a passphrase, which must be at least one
// character without white space or control characters.
func ParseJoinToken(token string) (JoinToken, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return JoinToken{}, fmt.Errorf("%w: the token is empty; copy it from data-dir/server/token on the server", ErrInvalidToken)
	}
	rest, full := strings.CutPrefix(token, tokenPrefix)
	if !full {
		if err := checkSecret(token, "the passphrase"); err != nil {
			return JoinToken{}, err
		}
		return JoinToken{Secret: token}, nil
	}
	caHash, creds, ok := strings.Cut(rest, "::")
	if !ok {
		return JoinToken{}, fmt.Errorf("%w: \"::\" is missing; a token looks like %s (a passphrase must not start with %q)", ErrInvalidToken, tokenForm, tokenPrefix)
	}
	caHash = strings.ToLower(caHash)
	if b, err := hex.DecodeString(caHash); err != nil || len(b) != sha256.Size {
		return JoinToken{}, fmt.Errorf("%w: the CA hash %q is not 64 hex characters; copy the whole token from data-dir/server/token", ErrInvalidToken, caHash)
	}
	user, secret, ok := strings.Cut(creds, ":")
	if !ok || (user != ServerTokenUser && user != AgentTokenUser) {
		return JoinToken{}, fmt.Errorf("%w: after \"::\" it must say \"server:<secret>\" or \"node:<secret>\"; a token looks like %s", ErrInvalidToken, tokenForm)
	}
	if secret == "" {
		return JoinToken{}, fmt.Errorf("%w: the secret after %q is empty; copy the whole token from data-dir/server/token", ErrInvalidToken, user+":")
	}
	if err := checkSecret(secret, "the secret"); err != nil {
		return JoinToken{}, err
	}
	return JoinToken{CAHash: caHash, User: user, Secret: secret}, nil
}

func checkSecret(secret, what string) error {
	if strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%w: %s contains spaces or control characters; copy the token again", ErrInvalidToken, what)
	}
	return nil
}

// VerifyCAHash checks that caCertPEM, as fetched from a server, is the CA the
// token's hash names. An agent calls it before it sends anything else.
func VerifyCAHash(caCertPEM []byte, caHash string) error {
	got := CAHash(caCertPEM)
	want := strings.ToLower(strings.TrimSpace(caHash))
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fmt.Errorf("%w (server CA hash %s, token expects %s): check that --server points at the right server "+
			"and that the token is current (data-dir/server/token on the server)", ErrCAHashMismatch, got, want)
	}
	return nil
}

// EnsureToken returns the server token kept in path, creating it (mode
// 0600) with a new random secret on first use. If the CA changed since,
// the token is rewritten with the new CA hash and the same secret.
func EnsureToken(path string, caCertPEM []byte) (string, error) {
	return ensureToken(path, caCertPEM, ServerTokenUser)
}

// EnsureServerToken is EnsureToken with the server's --token: given, a
// full server token for this CA or a passphrase, is the secret of the
// token created on first use, and must be the file's secret after that
// (it changes only with orch token rotate).
func EnsureServerToken(path string, caCertPEM []byte, given string) (string, error) {
	if strings.TrimSpace(given) == "" {
		return EnsureToken(path, caCertPEM)
	}
	t, err := ParseJoinToken(given)
	if err != nil {
		return "", err
	}
	caHash := CAHash(caCertPEM)
	switch {
	case t.User == AgentTokenUser:
		return "", fmt.Errorf("%w: it is an agent token (::node:), which only joins agents; give the server token or a passphrase", ErrInvalidToken)
	case !t.Passphrase() && t.CAHash != caHash:
		return "", fmt.Errorf("%w: it names the CA hash %s, but this server's CA has hash %s", ErrCAHashMismatch, t.CAHash, caHash)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		token := FormatToken(caHash, t.Secret)
		return token, writeToken(path, token)
	}
	token, err := EnsureToken(path, caCertPEM)
	if err != nil {
		return "", err
	}
	if _, secret, _ := ParseToken(token); subtle.ConstantTimeCompare([]byte(secret), []byte(t.Secret)) != 1 {
		return "", fmt.Errorf("%w: the token file %q holds another secret: give the cluster's server token, which is in that file "+
			"(after orch token rotate, put the new token in --token); to make the given one the cluster's, run orch token rotate --new-token with it", ErrInvalidToken, path)
	}
	return token, nil
}

// EnsureAgentToken returns the agent token kept in path (mode 0600): the
// given one (a full agent token for this CA or a passphrase, which
// becomes its secret) when given, else the file's, else one with a new
// random secret. The file is rewritten when it changes.
func EnsureAgentToken(path string, caCertPEM []byte, given string) (string, error) {
	if strings.TrimSpace(given) == "" {
		return ensureToken(path, caCertPEM, AgentTokenUser)
	}
	t, err := ParseJoinToken(given)
	if err != nil {
		return "", err
	}
	caHash := CAHash(caCertPEM)
	switch {
	case t.User == ServerTokenUser:
		return "", fmt.Errorf("%w: it is a server token (::server:); an agent token is K10<hash>::node:<secret> or a passphrase", ErrInvalidToken)
	case !t.Passphrase() && t.CAHash != caHash:
		return "", fmt.Errorf("%w: it names the CA hash %s, but this cluster's CA has hash %s", ErrCAHashMismatch, t.CAHash, caHash)
	}
	token := FormatAgentToken(caHash, t.Secret)
	if data, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(data)) == token {
		return token, nil
	}
	return token, writeToken(path, token)
}

func ensureToken(path string, caCertPEM []byte, user string) (string, error) {
	caHash := CAHash(caCertPEM)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		t, err := ParseJoinToken(string(data))
		if err == nil && (t.Passphrase() || t.User != user) {
			err = fmt.Errorf("%w: it must look like %s", ErrInvalidToken, formatToken("<64 hex characters>", user, "<secret>"))
		}
		if err != nil {
			return "", fmt.Errorf("token file %q: %w; fix the file or remove it to create a new token (agents must then join with the new one)", path, err)
		}
		token := formatToken(caHash, user, t.Secret)
		if t.CAHash != caHash {
			if err := writeToken(path, token); err != nil {
				return "", err
			}
		}
		return token, nil
	case errors.Is(err, fs.ErrNotExist):
		secret, err := newSecret()
		if err != nil {
			return "", err
		}
		token := formatToken(caHash, user, secret)
		if err := writeToken(path, token); err != nil {
			return "", err
		}
		return token, nil
	default:
		return "", fmt.Errorf("read token file %q: %w (check the permissions of --data-dir)", path, err)
	}
}

func writeToken(path, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory for token file %q: %w (check the permissions of --data-dir)", path, err)
	}
	return fsutil.WriteFileAtomic(path, []byte(token+"\n"), 0o600)
}

// NewSecret returns a new random token secret (32 hex characters).
func NewSecret() (string, error) { return newSecret() }

func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := randReader.Read(b); err != nil {
		return "", fmt.Errorf("generate token secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}
