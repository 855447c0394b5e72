package secretsencrypt

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

var (
	t0      = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	secrets = schema.GroupResource{Resource: "secrets"}
)

// A rotation goes start → prepare → rotate → reencrypt_finished, each step
// only from the one before; values written at each step stay readable at
// the next, and the last step leaves only the new key.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	load := func(s State) value.Transformer {
		t.Helper()
		ts, err := LoadState(ctx, s, filepath.Join(dir, "encryption-config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if ts.For(schema.GroupResource{Resource: "configmaps"}) != nil {
			t.Fatal("configmaps are encrypted too")
		}
		return ts.For(secrets)
	}
	write := func(tr value.Transformer, plain string) []byte {
		t.Helper()
		out, err := tr.TransformToStorage(ctx, []byte(plain), value.DefaultContext("/registry/secrets/ns/s"))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	read := func(tr value.Transformer, stored []byte) (string, bool, error) {
		out, stale, err := tr.TransformFromStorage(ctx, stored, value.DefaultContext("/registry/secrets/ns/s"))
		return string(out), stale, err
	}

	start, err := New(ProviderAESCBC, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := start.Keys(); !slices.Equal(got, []string{"aescbc:aescbckey-20261203T090000Z"}) || start.Stage != StageStart {
		t.Fatalf("new: %v %s", got, start.Stage)
	}
	tr := load(start)
	atStart := write(tr, "one")
	if !bytes.HasPrefix(atStart, []byte("k8s:enc:aescbc:v1:aescbckey-20261203T090000Z:")) || bytes.Contains(atStart, []byte("one")) {
		t.Fatalf("stored %q", atStart)
	}
	if got, stale, err := read(tr, []byte("plain before encryption")); err != nil || got != "plain before encryption" || !stale {
		t.Fatalf("plain text read as %q stale=%v %v, want it readable and stale", got, stale, err)
	}

	if _, err := start.Rotate(); err == nil || !strings.Contains(err.Error(), "rotate follows prepare") {
		t.Errorf("rotate at start: %v", err)
	}
	prepared, err := start.Prepare(t0.Add(time.Hour), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := prepared.Keys(); len(got) != 2 || got[0] != start.Keys()[0] || prepared.Hash() == start.Hash() {
		t.Fatalf("prepared keys %v: the old key must still write", got)
	}
	tr = load(prepared)
	if got, stale, err := read(tr, atStart); err != nil || got != "one" || stale {
		t.Errorf("after prepare: %q stale=%v %v", got, stale, err)
	}

	rotated, err := prepared.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	tr = load(rotated)
	if got, stale, err := read(tr, atStart); err != nil || got != "one" || !stale {
		t.Errorf("after rotate: %q stale=%v %v, want readable and stale", got, stale, err)
	}
	atRotate := write(tr, "two")
	if !bytes.HasPrefix(atRotate, []byte("k8s:enc:aescbc:v1:aescbckey-20261203T100000Z:")) {
		t.Errorf("after rotate the new key does not write: %q", atRotate[:48])
	}

	if _, err := prepared.Finish(); err == nil {
		t.Error("finish after prepare succeeded")
	}
	finished, err := rotated.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := finished.Keys(); !slices.Equal(got, []string{"aescbc:aescbckey-20261203T100000Z"}) || finished.Stage != StageReencryptFinished {
		t.Fatalf("finished: %v %s", got, finished.Stage)
	}
	tr = load(finished)
	if got, _, err := read(tr, atRotate); err != nil || got != "two" {
		t.Errorf("after finish, a value of the new key: %q %v", got, err)
	}
	if _, _, err := read(tr, atStart); err == nil {
		t.Error("after finish a value of the dropped key is still readable")
	}
	if _, err := finished.Prepare(t0.Add(2*time.Hour), rand.Reader); err != nil {
		t.Errorf("a new rotation after reencrypt_finished: %v", err)
	}
}

func TestNewSecretbox(t *testing.T) {
	s, err := New(ProviderSecretbox, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := LoadState(context.Background(), s, filepath.Join(t.TempDir(), "c.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.For(secrets).TransformToStorage(context.Background(), []byte("x"), value.DefaultContext("k"))
	if err != nil || !bytes.HasPrefix(out, []byte("k8s:enc:secretbox:v1:secretboxkey-")) {
		t.Errorf("%q %v", out, err)
	}
	if _, err := New("rot13", t0, rand.Reader); err == nil {
		t.Error("an unknown provider was accepted")
	}
}

func TestSealOpen(t *testing.T) {
	s, err := New(ProviderAESCBC, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := Seal([]byte("ca key"), s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(s.Config.Resources[0].Providers[0].AESCBC.Keys[0].Secret)) {
		t.Fatal("the sealed record shows the key")
	}
	opened, err := Open([]byte("ca key"), sealed)
	if err != nil || opened.Hash() != s.Hash() || opened.Stage != s.Stage {
		t.Fatalf("open: %v", err)
	}
	if _, err := Open([]byte("another ca key"), sealed); err == nil {
		t.Error("opened with another CA key")
	}
}

// TestPrepareInTheSameSecond: a key prepared in the second the current one
// was made gets a name of its own.
func TestPrepareInTheSameSecond(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	start, err := New(ProviderAESCBC, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := start.Prepare(t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := prepared.Keys(); !slices.Equal(got, []string{"aescbc:aescbckey-20261203T090000Z", "aescbc:aescbckey-20261203T090000Z-2"}) {
		t.Errorf("keys %v", got)
	}
}
