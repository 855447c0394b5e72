package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
)

func TestReadyWithoutSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	sent, err := Ready()
	if sent || err != nil {
		t.Fatalf("Ready() = %v, %v without NOTIFY_SOCKET; want false, nil", sent, err)
	}
}

func TestReadySendsReady(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "notify")
		env := path
		if abstract {
			path = "\x00orch-sdnotify-test-" + filepath.Base(t.TempDir())
			env = "@" + path[1:]
		}
		l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("NOTIFY_SOCKET", env)
		if sent, err := Ready(); !sent || err != nil {
			t.Fatalf("Ready() = %v, %v; want true, nil", sent, err)
		}
		buf := make([]byte, 64)
		n, err := l.Read(buf)
		l.Close()
		if err != nil || string(buf[:n]) != "READY=1" {
			t.Fatalf("socket got %q, %v; want READY=1", buf[:n], err)
		}
	}
}

func TestReadyReportsAMissingSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	if sent, err := Ready(); sent || err == nil {
		t.Fatalf("Ready() = %v, %v for a missing socket; want an error", sent, err)
	}
}
