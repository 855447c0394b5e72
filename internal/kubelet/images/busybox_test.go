package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"testing"
)

func TestWriteBusybox(t *testing.T) {
	const busybox = "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Fatalf("%v: install busybox-static (scripts/test-deps.sh does)", err)
	}
	var buf bytes.Buffer
	if err := WriteBusybox(&buf, busybox, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	archive := readArchive(t, buf.Bytes())
	var manifest []archiveManifest
	if err := json.Unmarshal(archive["manifest.json"], &manifest); err != nil || len(manifest) != 1 || manifest[0].RepoTags[0] != BusyboxRef {
		t.Fatalf("manifest %+v, %v", manifest, err)
	}
	want, _ := os.ReadFile(busybox)
	entries := map[string]*tar.Header{}
	r := tar.NewReader(bytes.NewReader(archive[manifest[0].Layers[0]]))
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
		if h.Name == "bin/busybox" {
			got, _ := io.ReadAll(r)
			if h.Typeflag != tar.TypeReg || !bytes.Equal(got, want) || h.Mode&0o111 == 0 {
				t.Errorf("bin/busybox is not the executable busybox: type %c, mode %o, %d bytes", h.Typeflag, h.Mode, len(got))
			}
		}
	}
	for _, applet := range []string{"sh", "sleep", "cat", "echo", "httpd"} {
		if h := entries["bin/"+applet]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
			t.Errorf("bin/%s is not a link to busybox: %+v", applet, h)
		}
	}
	if err := WriteBusybox(io.Discard, "/nonexistent/busybox", runtime.GOARCH); err == nil {
		t.Error("a missing busybox gave no error")
	}
}
