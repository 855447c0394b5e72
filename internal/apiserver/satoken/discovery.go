package satoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
)

// Paths of the service account issuer discovery documents.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
	// JWKSMediaType is the content type of the key set (RFC 7517 §8.5.1).
	JWKSMediaType = "application/jwk-set+json"
	// DiscoveryMaxAge is the Cache-Control max-age of both documents, in
	// seconds (upstream's for static keys).
	DiscoveryMaxAge = 3600
)

// Discovery renders the issuer's OpenID configuration and key set.
type Discovery struct {
	Config []byte // /.well-known/openid-configuration
	JWKS   []byte // /openid/v1/jwks
}

// JWKSURI is upstream's default jwks_uri: https://EXTERNAL-ADDRESS/openid/v1/jwks.
func JWKSURI(externalAddress string) string {
	return (&url.URL{Scheme: "https", Host: externalAddress, Path: JWKSPath}).String()
}

type jwk struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// NewDiscovery renders the documents for issuer (an https URL without query
// or fragment, as upstream requires) and the verifying keys.
func NewDiscovery(issuer, jwksURI string, keys []crypto.PublicKey) (*Discovery, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme != "https" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("service account issuer %q must be an https URL without query or fragment", issuer)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no keys provided for validating keyset")
	}
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	var algs []string
	for i, key := range keys {
		k, err := jwkOf(key)
		if err != nil {
			return nil, fmt.Errorf("error constructing JWK for key #%d: %w", i, err)
		}
		set.Keys = append(set.Keys, k)
		if !slices.Contains(algs, k.Alg) {
			algs = append(algs, k.Alg)
		}
	}
	slices.Sort(algs)
	config, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{issuer, jwksURI, []string{"id_token"}, []string{"public"}, algs})
	if err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return &Discovery{Config: config, JWKS: jwks}, nil
}

func jwkOf(key crypto.PublicKey) (jwk, error) {
	method, err := methodFor(key)
	if err != nil {
		return jwk{}, err
	}
	kid, err := KeyID(key)
	if err != nil {
		return jwk{}, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	k := jwk{Use: "sig", Kid: kid, Alg: method.Alg()}
	switch pub := key.(type) {
	case *rsa.PublicKey:
		k.Kty, k.N, k.E = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		point, err := pub.Bytes() // 0x04 || X || Y
		if err != nil {
			return jwk{}, err
		}
		size := (len(point) - 1) / 2
		k.Kty, k.Crv, k.X, k.Y = "EC", pub.Curve.Params().Name, b64(point[1:1+size]), b64(point[1+size:])
	}
	return k, nil
}
