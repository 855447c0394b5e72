package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	builtin "orch/manifests"
)

func TestWriteDefaults(t *testing.T) {
	defaults := fstest.MapFS{
		"a.yaml":     {Data: []byte("a: 1\n")},
		"b.yml":      {Data: []byte("b: 1\n")},
		"c.json":     {Data: []byte(`{"c": 1}`)},
		"README.md":  {Data: []byte("not a manifest")},
		"sub/d.yaml": {Data: []byte("d: 1\n")},
	}
	dir := filepath.Join(t.TempDir(), "server", "manifests")
	if err := WriteDefaults(defaults, dir, nil); err != nil {
		t.Fatal(err)
	}
	expectDir(t, dir, map[string]string{"a.yaml": "a: 1\n", "b.yml": "b: 1\n", "c.json": `{"c": 1}`})
	for _, name := range []string{"a.yaml", "b.yml", "c.json"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, err %v; want 0600", name, fi.Mode(), err)
		}
	}

	// A changed default is written back; one with NAME.skip is the user's;
	// a disabled one is removed, and a user's file of a disabled name stays.
	write(t, dir, "a.yaml", "a: edited\n")
	write(t, dir, "c.json", `{"c": "mine"}`)
	write(t, dir, "c.json.skip", "")
	write(t, dir, "mine.yaml", "m: 1\n")
	if err := WriteDefaults(defaults, dir, []string{"b", "mine", "servicelb"}); err != nil {
		t.Fatal(err)
	}
	expectDir(t, dir, map[string]string{"a.yaml": "a: 1\n", "c.json": `{"c": "mine"}`, "c.json.skip": "", "mine.yaml": "m: 1\n"})

	// Enabled again, it comes back.
	if err := WriteDefaults(defaults, dir, nil); err != nil {
		t.Fatal(err)
	}
	expectDir(t, dir, map[string]string{"a.yaml": "a: 1\n", "b.yml": "b: 1\n", "c.json": `{"c": "mine"}`, "c.json.skip": "", "mine.yaml": "m: 1\n"})
}

func TestWriteDefaultsErrors(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	write(t, filepath.Dir(notDir), "file", "x")
	err := WriteDefaults(fstest.MapFS{"a.yaml": {Data: []byte("a: 1\n")}}, notDir, nil)
	if err == nil || !strings.Contains(err.Error(), "create the manifests directory") {
		t.Errorf("dir is a file: error %v, want one about creating the manifests directory", err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	err = WriteDefaults(fstest.MapFS{"a.yaml": {Data: []byte("a: 1\n")}, "b.yaml": {Data: []byte("b: 1\n")}}, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("a directory in the way: error %v, want one naming a.yaml", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b.yaml")); string(got) != "b: 1\n" {
		t.Errorf("b.yaml = %q: one failing default stopped the others", got)
	}
}

// TestBuiltinDefaults: every built-in manifest parses into objects.
func TestBuiltinDefaults(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDefaults(builtin.Defaults, dir, nil); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no built-in manifest written (%v)", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Parse(e.Name(), data)
		if err != nil || len(objs) == 0 {
			t.Errorf("%s: %d objects, err %v", e.Name(), len(objs), err)
		}
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// expectDir checks that dir holds exactly want (name → content).
func expectDir(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		got[e.Name()] = string(data)
	}
	if len(got) != len(want) {
		t.Errorf("dir holds %q, want %q", got, want)
		return
	}
	for name, content := range want {
		if c, ok := got[name]; !ok || c != content {
			t.Errorf("dir holds %q, want %q", got, want)
			return
		}
	}
}
