package pki

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var tokenRE = regexp.MustCompile(`^K10[0-9a-f]{64}::server:[0-9a-f]{32}$`)

func TestEnsureToken(t *testing.T) {
	dir := t.TempDir()
	caPEM := []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")
	path := filepath.Join(dir, "server", "token")

	token, err := EnsureToken(path, caPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !tokenRE.MatchString(token) {
		t.Fatalf("token %q does not match %s", token, tokenRE)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token mode = %o, want 600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.TrimSpace(string(data)) != token {
		t.Errorf("file holds %q, want %q", data, token)
	}

	caHash, secret, err := ParseToken(token)
	if err != nil {
		t.Fatal(err)
	}
	if caHash != CAHash(caPEM) {
		t.Errorf("hash = %s, want %s", caHash, CAHash(caPEM))
	}
	if err := VerifyCAHash(caPEM, caHash); err != nil {
		t.Errorf("VerifyCAHash: %v", err)
	}
	if FormatToken(caHash, secret) != token {
		t.Errorf("FormatToken(ParseToken(t)) != t")
	}

	again, err := EnsureToken(path, caPEM)
	if err != nil || again != token {
		t.Errorf("second EnsureToken = %q, %v; want the same token", again, err)
	}

	// A new CA keeps the secret and updates the hash.
	newCA := []byte("-----BEGIN CERTIFICATE-----\nother\n-----END CERTIFICATE-----\n")
	updated, err := EnsureToken(path, newCA)
	if err != nil {
		t.Fatal(err)
	}
	h2, s2, _ := ParseToken(updated)
	if h2 != CAHash(newCA) || s2 != secret {
		t.Errorf("after CA change got hash %s secret %s; want %s, %s", h2, s2, CAHash(newCA), secret)
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != updated {
		t.Errorf("token file not rewritten after CA change")
	}

	other, err := EnsureToken(filepath.Join(dir, "other"), caPEM)
	if err != nil || other == token {
		t.Errorf("a second token file got the same secret (%v)", err)
	}

	writeTestFile(t, path, "garbage\n")
	if _, err := EnsureToken(path, caPEM); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("malformed token file: err = %v", err)
	}
}

func TestParseToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		token      string
		wantHash   string
		wantSecret string
		wantErr    string
	}{
		{name: "good", token: "K10" + hash + "::server:0123abcd", wantHash: hash, wantSecret: "0123abcd"},
		{name: "trailing newline", token: "K10" + hash + "::server:s3cret\n", wantHash: hash, wantSecret: "s3cret"},
		{name: "upper-case hash", token: "K10" + strings.ToUpper(hash) + "::server:x", wantHash: hash, wantSecret: "x"},
		{name: "secret with colon", token: "K10" + hash + "::server:a:b", wantHash: hash, wantSecret: "a:b"},
		{name: "empty", token: "  ", wantErr: "empty"},
		{name: "bare secret", token: "s3cret", wantErr: `must start with "K10"`},
		{name: "no separator", token: "K10" + hash + "server:x", wantErr: `"::" is missing`},
		{name: "short hash", token: "K10abcd::server:x", wantErr: "not 64 hex"},
		{name: "non-hex hash", token: "K10" + strings.Repeat("zz", 32) + "::server:x", wantErr: "not 64 hex"},
		{name: "node user", token: "K10" + hash + "::node:x", wantErr: `must say "server:<secret>"`},
		{name: "no user", token: "K10" + hash + "::x", wantErr: `must say "server:<secret>"`},
		{name: "empty secret", token: "K10" + hash + "::server:", wantErr: "secret after"},
		{name: "space in secret", token: "K10" + hash + "::server:a b", wantErr: "spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, s, err := ParseToken(tt.token)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidToken containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h != tt.wantHash || s != tt.wantSecret {
				t.Errorf("got (%s, %s), want (%s, %s)", h, s, tt.wantHash, tt.wantSecret)
			}
		})
	}
}

func TestVerifyCAHash(t *testing.T) {
	ca := []byte("ca bytes")
	tests := []struct {
		name string
		hash string
		ok   bool
	}{
		{"match", CAHash(ca), true},
		{"upper case", strings.ToUpper(CAHash(ca)), true},
		{"other CA", CAHash([]byte("other")), false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyCAHash(ca, tt.hash)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrCAHashMismatch) {
				t.Errorf("err = %v, want ErrCAHashMismatch", err)
			}
		})
	}
}
