package payload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/klauspost/compress/zstd"
)

// fakePayload is a payload of the files named in contents, as scripts/payload
// writes one.
func fakePayload(t *testing.T, contents map[string]string) fstest.MapFS {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	var sums []string
	for name, data := range contents {
		sum := sha256.Sum256([]byte(data))
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+name)
		fsys[name+".zst"] = &fstest.MapFile{Data: enc.EncodeAll([]byte(data), nil)}
	}
	slices.Sort(sums)
	fsys[Sums] = &fstest.MapFile{Data: []byte(strings.Join(sums, "\n") + "\n")}
	return fsys
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	v1 := fakePayload(t, map[string]string{"runc": "runc 1", "bridge": "bridge 1"})
	bin, wrote, err := install(v1, dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(wrote)
	if bin != filepath.Join(dir, Current, "bin") || !slices.Equal(wrote, []string{"bridge", "runc"}) {
		t.Fatalf("install = %s, %v", bin, wrote)
	}
	if got := read(t, filepath.Join(bin, "runc")); got != "runc 1" {
		t.Errorf("runc holds %q", got)
	}
	if st, err := os.Stat(filepath.Join(bin, "runc")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("runc: %v, %v", st, err)
	}

	// Intact: nothing is written again.
	if _, wrote, err := install(v1, dir); err != nil || len(wrote) != 0 {
		t.Errorf("second install wrote %v, %v", wrote, err)
	}

	// A changed or deleted file is put back.
	if err := os.WriteFile(filepath.Join(bin, "runc"), []byte("tampered"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bin, "bridge")); err != nil {
		t.Fatal(err)
	}
	_, wrote, err = install(v1, dir)
	slices.Sort(wrote)
	if err != nil || !slices.Equal(wrote, []string{"bridge", "runc"}) {
		t.Errorf("install after tampering wrote %v, %v", wrote, err)
	}
	if got := read(t, filepath.Join(bin, "runc")); got != "runc 1" {
		t.Errorf("runc holds %q after repair", got)
	}

	// A new version gets its own directory; current follows it and the old
	// one goes.
	_, oldID, _ := manifest(v1)
	v2 := fakePayload(t, map[string]string{"runc": "runc 2", "bridge": "bridge 1"})
	if _, _, err := install(v2, dir); err != nil {
		t.Fatal(err)
	}
	_, newID, _ := manifest(v2)
	if link, _ := os.Readlink(filepath.Join(dir, Current)); link != newID || newID == oldID {
		t.Errorf("current -> %q, want %q (old %q)", link, newID, oldID)
	}
	if got := read(t, filepath.Join(bin, "runc")); got != "runc 2" {
		t.Errorf("current runc holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, oldID)); !os.IsNotExist(err) {
		t.Errorf("the old payload is still there: %v", err)
	}
}

func TestInstallRefusesBadPayloads(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := install(fstest.MapFS{}, dir); !errors.Is(err, ErrMissing) {
		t.Errorf("empty payload: %v", err)
	}
	bad := fakePayload(t, map[string]string{"runc": "runc 1"})
	bad["runc.zst"].Data = mustCompress(t, "something else")
	if _, _, err := install(bad, dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("payload whose file does not match its sum: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "bin", "*"))
	if len(matches) != 0 {
		t.Errorf("a bad file was left: %v", matches)
	}
	for _, sums := range []string{"", "abc  runc\n", strings.Repeat("0", 64) + "  ../runc\n", strings.Repeat("0", 64) + " runc\n"} {
		if _, _, err := install(fstest.MapFS{Sums: {Data: []byte(sums)}}, dir); err == nil {
			t.Errorf("manifest %q accepted", sums)
		}
	}
}

func mustCompress(t *testing.T, s string) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll([]byte(s), nil)
}

// TestEmbeddedPayload checks the payload this binary was built with (make
// build writes it before the tests run): every file the node needs is in
// it, and it installs.
func TestEmbeddedPayload(t *testing.T) {
	files, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	for _, want := range []string{"runc", "containerd-shim-runc-v2", "bridge", "host-local", "loopback", "portmap", "bandwidth", "firewall"} {
		if !slices.Contains(names, want) {
			t.Errorf("the payload lacks %s: %v", want, names)
		}
	}
	bin, _, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(bin, "runc")); err != nil || st.Size() < 1<<20 {
		t.Errorf("installed runc: %v, %v", st, err)
	}
}
