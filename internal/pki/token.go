package pki

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"orch/internal/fsutil"
	"os"
	"path/filepath"
	"strings"
)

// Sentinel errors of the join token; test them with errors.Is.
var (
	// ErrInvalidToken means a token is not of the form
	// K10<sha256 of the CA>::server:<secret>.
	ErrInvalidToken = errors.New("invalid join token")
	// ErrCAHashMismatch means a server's CA is not the one the token names.
	ErrCAHashMismatch = errors.New("the server's CA certificate does not match the join token")
)

const (
	tokenPrefix = "K10"
	tokenUser   = "server"
	// secretBytes random bytes make the 32 hex characters of a new secret.
	secretBytes = 16
)

// tokenForm is how a token should look, quoted in errors.
const tokenForm = "K10<64 hex characters>::server:<secret>"

// CAHash returns the hex SHA-256 of the CA certificate file's bytes, the part
// of the token between K10 and "::".
func CAHash(caCertPEM []byte) string {
	sum := sha256.Sum256(caCertPEM)
	return hex.EncodeToString(sum[:])
}

// FormatToken builds a token from a CA hash and a secret.
func FormatToken(caHash, secret string) string {
	return tokenPrefix + caHash + "::" + tokenUser + ":" + secret
}

// ParseToken splits K10<caHash>::server:<secret> into its CA hash (lower-case
// hex) and secret. Surrounding white space is ignored.
func ParseToken(token string) (caHash, secret string, err error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return "", "", fmt.Errorf("%w: the token is empty; copy it from data-dir/server/token on the server", ErrInvalidToken)
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w: it must start with %q and look like %s; copy it from data-dir/server/token on the server", ErrInvalidToken, tokenPrefix, tokenForm)
	}
	caHash, creds, ok := strings.Cut(rest, "::")
	if !ok {
		return "", "", fmt.Errorf("%w: \"::\" is missing; a token looks like %s", ErrInvalidToken, tokenForm)
	}
	caHash = strings.ToLower(caHash)
	if b, err := hex.DecodeString(caHash); err != nil || len(b) != sha256.Size {
		return "", "", fmt.Errorf("%w: the CA hash %q is not 64 hex characters; copy the whole token from data-dir/server/token", ErrInvalidToken, caHash)
	}
	user, secret, ok := strings.Cut(creds, ":")
	if !ok || user != tokenUser {
		return "", "", fmt.Errorf("%w: after \"::\" it must say %q; a token looks like %s", ErrInvalidToken, tokenUser+":<secret>", tokenForm)
	}
	if secret == "" {
		return "", "", fmt.Errorf("%w: the secret after %q is empty; copy the whole token from data-dir/server/token", ErrInvalidToken, tokenUser+":")
	}
	if strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", "", fmt.Errorf("%w: the secret contains spaces or control characters; copy the token again", ErrInvalidToken)
	}
	return caHash, secret, nil
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

// EnsureToken returns the join token kept in path, creating it (mode 0600)
// with a new random secret on first use. If the CA changed since, the token is
// rewritten with the new CA hash and the same secret.
func EnsureToken(path string, caCertPEM []byte) (string, error) {
	caHash := CAHash(caCertPEM)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		oldHash, secret, err := ParseToken(string(data))
		if err != nil {
			return "", fmt.Errorf("token file %q: %w; fix the file or remove it to create a new token (agents must then join with the new one)", path, err)
		}
		token := FormatToken(caHash, secret)
		if oldHash != caHash {
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
		token := FormatToken(caHash, secret)
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

func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := randReader.Read(b); err != nil {
		return "", fmt.Errorf("generate token secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}
