package satoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// Signer signs tokens for one issuer with one key.
type Signer struct {
	issuer string
	key    crypto.Signer
	method jwt.SigningMethod
	keyID  string
}

// NewSigner returns a signer for issuer with key, an *rsa.PrivateKey
// (RS256) or an *ecdsa.PrivateKey (ES256, ES384 or ES512 by curve).
func NewSigner(issuer string, key crypto.Signer) (*Signer, error) {
	method, err := methodFor(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{issuer: issuer, key: key, method: method, keyID: kid}, nil
}

// Issuer is the iss claim of the tokens.
func (s *Signer) Issuer() string { return s.issuer }

// Public is the key that verifies the tokens.
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// Sign returns the compact serialization of c with iss set to the issuer
// and the kid header naming the key.
func (s *Signer) Sign(c *Claims) (string, error) {
	signed := *c
	signed.Issuer = s.issuer
	tok := jwt.NewWithClaims(s.method, &signed)
	tok.Header["kid"] = s.keyID
	out, err := tok.SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("sign the service account token: %w", err)
	}
	return out, nil
}

// methodFor is the JWS algorithm upstream uses for a public key.
func methodFor(pub crypto.PublicKey) (jwt.SigningMethod, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jwt.SigningMethodRS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jwt.SigningMethodES256, nil
		case elliptic.P384():
			return jwt.SigningMethodES384, nil
		case elliptic.P521():
			return jwt.SigningMethodES512, nil
		}
		return nil, fmt.Errorf("an ECDSA key on curve %s cannot sign service account tokens (use P-256, P-384 or P-521)", k.Curve.Params().Name)
	}
	return nil, fmt.Errorf("a key of type %T cannot sign service account tokens (use RSA or ECDSA)", pub)
}

// KeyID is the kid of a key as upstream derives it: the unpadded base64url
// SHA-256 of the key's PKIX DER encoding, so it reveals nothing of the key.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
