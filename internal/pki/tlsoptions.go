package pki

import (
	"crypto/tls"
	"fmt"

	cliflag "k8s.io/component-base/cli/flag"
)

// TLSOptions are the protocol versions and cipher suites the ports orch
// serves (6443, 10250) accept: --tls-min-version and --tls-cipher-suites.
type TLSOptions struct {
	MinVersion   uint16
	CipherSuites []uint16 // TLS 1.2's; TLS 1.3 chooses its own
}

// DefaultCipherSuites are TLS 1.2's AEAD suites with forward secrecy, the
// only ones orch offers unless told otherwise.
var DefaultCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// DefaultTLSOptions are TLS 1.2 and up with DefaultCipherSuites.
func DefaultTLSOptions() TLSOptions {
	return TLSOptions{MinVersion: tls.VersionTLS12, CipherSuites: DefaultCipherSuites}
}

// ParseTLSOptions reads the flags, with upstream's names: a version of
// VersionTLS12 or VersionTLS13 ("" is VersionTLS12) and suites as Go and
// kube-apiserver name them (none given: DefaultCipherSuites). Versions
// below 1.2 are refused.
func ParseTLSOptions(minVersion string, suites []string) (TLSOptions, error) {
	opts := DefaultTLSOptions()
	if minVersion != "" {
		v, err := cliflag.TLSVersion(minVersion)
		if err != nil {
			return opts, fmt.Errorf("--tls-min-version: %w (use VersionTLS12 or VersionTLS13)", err)
		}
		if v < tls.VersionTLS12 {
			return opts, fmt.Errorf("--tls-min-version %s: orch serves TLS 1.2 and up only (use VersionTLS12 or VersionTLS13)", minVersion)
		}
		opts.MinVersion = v
	}
	if len(suites) > 0 {
		ids, err := cliflag.TLSCipherSuites(suites)
		if err != nil {
			return opts, fmt.Errorf("--tls-cipher-suites: %w", err)
		}
		for i, id := range ids {
			for _, bad := range tls.InsecureCipherSuites() {
				if bad.ID == id {
					return opts, fmt.Errorf("--tls-cipher-suites: %s is insecure; orch does not offer it", suites[i])
				}
			}
		}
		opts.CipherSuites = ids
	}
	return opts, nil
}

// Apply sets the options on c. Zero options (a Config built by hand) are
// the defaults.
func (o TLSOptions) Apply(c *tls.Config) {
	if o.MinVersion == 0 {
		o = DefaultTLSOptions()
	}
	c.MinVersion, c.CipherSuites = o.MinVersion, o.CipherSuites
}
