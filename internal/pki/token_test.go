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

func TestParseJoinToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		token   string
		want    JoinToken
		wantErr string
	}{
		{name: "server", token: "K10" + hash + "::server:0123abcd", want: JoinToken{hash, "server", "0123abcd"}},
		{name: "agent", token: "K10" + hash + "::node:0123abcd", want: JoinToken{hash, "node", "0123abcd"}},
		{name: "trailing newline", token: "K10" + hash + "::server:s3cret\n", want: JoinToken{hash, "server", "s3cret"}},
		{name: "upper-case hash", token: "K10" + strings.ToUpper(hash) + "::server:x", want: JoinToken{hash, "server", "x"}},
		{name: "secret with colon", token: "K10" + hash + "::server:a:b", want: JoinToken{hash, "server", "a:b"}},
		{name: "passphrase", token: " correct-horse:battery \n", want: JoinToken{Secret: "correct-horse:battery"}},
		{name: "empty", token: "  ", wantErr: "empty"},
		{name: "passphrase with space", token: "two words", wantErr: "passphrase contains spaces"},
		{name: "no separator", token: "K10" + hash + "server:x", wantErr: `"::" is missing`},
		{name: "short hash", token: "K10abcd::server:x", wantErr: "not 64 hex"},
		{name: "non-hex hash", token: "K10" + strings.Repeat("zz", 32) + "::server:x", wantErr: "not 64 hex"},
		{name: "other user", token: "K10" + hash + "::admin:x", wantErr: `must say "server:<secret>" or "node:<secret>"`},
		{name: "no user", token: "K10" + hash + "::x", wantErr: `must say "server:<secret>"`},
		{name: "empty secret", token: "K10" + hash + "::server:", wantErr: "secret after"},
		{name: "space in secret", token: "K10" + hash + "::server:a b", wantErr: "spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJoinToken(tt.token)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidToken containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || got.Passphrase() != (tt.want.CAHash == "") {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	// ParseToken wants the full form.
	if _, _, err := ParseToken("s3cret"); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), `must start with "K10"`) {
		t.Errorf("ParseToken of a passphrase: %v", err)
	}
	if h, s, err := ParseToken("K10" + hash + "::node:x"); err != nil || h != hash || s != "x" {
		t.Errorf("ParseToken of an agent token: %s %s %v", h, s, err)
	}
}

func TestEnsureAgentToken(t *testing.T) {
	dir := t.TempDir()
	caPEM := []byte("ca")
	hash := CAHash(caPEM)
	path := filepath.Join(dir, "server", "agent-token")
	agentRE := regexp.MustCompile(`^K10` + hash + `::node:[0-9a-f]{32}$`)

	generated, err := EnsureAgentToken(path, caPEM, "")
	if err != nil || !agentRE.MatchString(generated) {
		t.Fatalf("generated %q, %v; want it to match %s", generated, err, agentRE)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent token file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if again, err := EnsureAgentToken(path, caPEM, ""); err != nil || again != generated {
		t.Errorf("second start: %q, %v; want the same token", again, err)
	}
	for _, tc := range []struct {
		name, given, want, wantErr string
	}{
		{name: "passphrase", given: "agents-only", want: "K10" + hash + "::node:agents-only"},
		{name: "full agent token", given: "K10" + hash + "::node:given", want: "K10" + hash + "::node:given"},
		{name: "server token", given: "K10" + hash + "::server:x", wantErr: "server token"},
		{name: "other CA", given: "K10" + strings.Repeat("0", 64) + "::node:x", wantErr: "CA hash"},
		{name: "malformed", given: "K10abc", wantErr: `"::" is missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EnsureAgentToken(path, caPEM, tc.given)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != tc.want {
				t.Errorf("file holds %q, want %q", data, tc.want)
			}
		})
	}
	// A server token file is not an agent token file.
	writeTestFile(t, path, "K10"+hash+"::server:x\n")
	if _, err := EnsureAgentToken(path, caPEM, ""); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "::node:") {
		t.Errorf("a server token in the agent token file: %v", err)
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

func TestEnsureServerToken(t *testing.T) {
	caPEM := []byte("ca")
	hash := CAHash(caPEM)
	dir := t.TempDir()
	path := filepath.Join(dir, "server", "token")
	got, err := EnsureServerToken(path, caPEM, " my-passphrase\n")
	if want := "K10" + hash + "::server:my-passphrase"; err != nil || got != want {
		t.Fatalf("first start with a passphrase: %q, %v; want %q", got, err, want)
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != got {
		t.Errorf("file holds %q, want the full token", data)
	}
	for _, tc := range []struct {
		name, given, wantErr string
	}{
		{name: "the same passphrase", given: "my-passphrase"},
		{name: "the full token", given: "K10" + hash + "::server:my-passphrase"},
		{name: "nothing given", given: ""},
		{name: "another passphrase", given: "other", wantErr: "holds another secret"},
		{name: "another CA", given: "K10" + strings.Repeat("0", 64) + "::server:my-passphrase", wantErr: "CA hash"},
		{name: "an agent token", given: "K10" + hash + "::node:my-passphrase", wantErr: "agent token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token, err := EnsureServerToken(path, caPEM, tc.given)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || token != got {
				t.Errorf("%q, %v; want %q", token, err, got)
			}
		})
	}
	// A full token on a first start keeps its secret.
	other := filepath.Join(dir, "other")
	if token, err := EnsureServerToken(other, caPEM, "K10"+hash+"::server:full"); err != nil || token != "K10"+hash+"::server:full" {
		t.Errorf("first start with a full token: %q, %v", token, err)
	}
}
