package pki

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

func TestParseTLSOptions(t *testing.T) {
	for _, tc := range []struct {
		min     string
		suites  []string
		version uint16
		want    []uint16
		err     string
	}{
		{version: tls.VersionTLS12, want: DefaultCipherSuites},
		{min: "VersionTLS13", version: tls.VersionTLS13, want: DefaultCipherSuites},
		{suites: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}, version: tls.VersionTLS12, want: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}},
		{min: "VersionTLS10", err: "orch serves TLS 1.2 and up only"},
		{min: "TLS1.2", err: "--tls-min-version"},
		{suites: []string{"TLS_RSA_WITH_RC4_128_SHA"}, err: "is insecure"},
		{suites: []string{"TLS_NO_SUCH_SUITE"}, err: "--tls-cipher-suites"},
	} {
		got, err := ParseTLSOptions(tc.min, tc.suites)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %v: error %v, want %q", tc.min, tc.suites, err, tc.err)
			}
			continue
		}
		if err != nil || got.MinVersion != tc.version || !slices.Equal(got.CipherSuites, tc.want) {
			t.Errorf("%q %v: %+v %v", tc.min, tc.suites, got, err)
		}
	}
	// Every default suite is an AEAD one Go does not call insecure.
	for _, id := range DefaultCipherSuites {
		name := tls.CipherSuiteName(id)
		if !strings.Contains(name, "GCM") && !strings.Contains(name, "CHACHA20_POLY1305") {
			t.Errorf("default suite %s is not AEAD", name)
		}
	}
}
