package join

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"orch/internal/pki"
)

// Sentinel errors of Join and the Renewer; test them with errors.Is. Only
// ErrUnreachable is retried: the others need the user to change something.
var (
	// ErrInvalidToken means --token is neither K10<hash>::server:<secret>,
	// K10<hash>::node:<secret> nor a passphrase.
	ErrInvalidToken = pki.ErrInvalidToken
	// ErrCAHashMismatch means the CA the server sent is not the one the
	// token names; the secret was not sent.
	ErrCAHashMismatch = errors.New("the server's CA does not match the token's hash")
	// ErrUnauthorized means the server refused the token's secret.
	ErrUnauthorized = errors.New("the server refused the join token")
	// ErrNodeNameTaken means another agent joined with the same node name.
	ErrNodeNameTaken = errors.New("node name already taken")
	// ErrRejected means the server refused the request for another reason
	// (an invalid node name, hostname or IP); its message says which.
	ErrRejected = errors.New("the server refused the node certificates request")
	// ErrCSRRefused means a CertificateSigningRequest the Renewer made for
	// the node's client certificate was denied, or failed; the error names
	// the condition's reason and message.
	ErrCSRRefused = errors.New("the node's CertificateSigningRequest was not granted")
	// ErrUnreachable means the server could not be reached or answered
	// with a temporary error; Join retries it while its context lives.
	ErrUnreachable = errors.New("cannot reach the orch server")
)

// serverError is an error the server explained: its message is the
// server's, and it matches kind with errors.Is.
type serverError struct {
	kind error
	msg  string
}

func (e *serverError) Error() string { return e.msg }
func (e *serverError) Unwrap() error { return e.kind }

// retriable reports whether Join should try again after err.
func retriable(err error) bool { return errors.Is(err, ErrUnreachable) }

// isCertificateError reports whether err is the TLS verification of the
// server's certificate failing (which retrying does not fix).
func isCertificateError(err error) bool {
	var verr *tls.CertificateVerificationError
	var herr x509.HostnameError
	var aerr x509.UnknownAuthorityError
	var cerr x509.CertificateInvalidError
	return errors.As(err, &verr) || errors.As(err, &herr) || errors.As(err, &aerr) || errors.As(err, &cerr)
}
