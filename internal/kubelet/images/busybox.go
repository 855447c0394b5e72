package images

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BusyboxRef is the name of the test image WriteBusybox builds.
const BusyboxRef = "orch.test/busybox:1"

// WriteBusybox writes BusyboxRef as a docker-archive tarball: the static
// busybox at busyboxPath (Debian's busybox-static installs /bin/busybox) as
// /bin/busybox, and a link in /bin for each applet `busybox --list` names,
// so `sh -c ...`, `sleep`, `httpd` and the rest are on the default PATH.
// The binary runs here to list its applets; for another architecture
// (arch is not this machine's), this machine's /bin/busybox lists them, so
// it must be the same Debian busybox-static version.
func WriteBusybox(w io.Writer, busyboxPath, arch string) error {
	binary, err := os.ReadFile(busyboxPath)
	if err != nil {
		return fmt.Errorf("busybox test image: %w (Debian's busybox-static provides /bin/busybox; scripts/test-deps.sh installs it)", err)
	}
	lister := busyboxPath
	if arch != runtime.GOARCH {
		lister = "/bin/busybox"
	}
	out, err := exec.Command(lister, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox test image: %s --list: %w", lister, err)
	}
	files := []File{{Path: "/bin/busybox", Mode: 0o755, Data: binary}}
	for _, applet := range strings.Fields(string(out)) {
		// The list names busybox itself; a link would replace the binary.
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, File{Path: "/bin/" + applet, Link: "busybox"})
	}
	if len(files) < 10 {
		return fmt.Errorf("busybox test image: %s --list named only %d applets", busyboxPath, len(files)-1)
	}
	return Write(w, BusyboxRef, files, Config{
		Arch: arch,
		Cmd:  []string{"sh"},
		Env:  []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	})
}

// WriteBusyboxFile writes BusyboxRef, built from this machine's
// /bin/busybox, to the archive path (its directory made if missing),
// through a temporary file and a rename, so that an agent watching the
// directory never imports half an archive.
func WriteBusyboxFile(path string) error {
	return WriteBusyboxFileFor(path, "/bin/busybox", runtime.GOARCH)
}

// WriteBusyboxFileFor is WriteBusyboxFile for the static busybox of arch
// at busyboxPath (make release takes arm64's and arm's from Debian's
// busybox-static packages of those architectures).
func WriteBusyboxFileFor(path, busyboxPath, arch string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".busybox-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteBusybox(f, busyboxPath, arch); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
