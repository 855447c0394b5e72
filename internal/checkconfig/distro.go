package checkconfig

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
)

// distro is what a fix needs to know of the host's Linux distribution: the
// command that installs packages and the names of the packages orch's
// fixes ask for.
type distro struct {
	install string            // e.g. "apt-get install"
	pkgs    map[string]string // orch's name of a package → the distribution's
	// raspberryPi hosts need the memory cgroup turned on at boot.
	raspberryPi bool
	// unknown is the os-release ID of a distribution orch does not know,
	// whose fixes say they use Debian's commands.
	unknown string
}

// The packages fixes name, by orch's names: what the host still provides
// (orch carries containerd, runc and the CNI plugins itself).
const (
	pkgIPTables = "iptables"
	pkgKmod     = "kmod"
)

var (
	debianFamily = distro{install: "apt-get install", pkgs: map[string]string{pkgIPTables: "iptables", pkgKmod: "kmod"}}
	// redHatFamily is Fedora, RHEL and its rebuilds.
	redHatFamily = distro{install: "dnf install", pkgs: map[string]string{pkgIPTables: "iptables-nft", pkgKmod: "kmod"}}
	alpineFamily = distro{install: "apk add", pkgs: map[string]string{pkgIPTables: "iptables", pkgKmod: "kmod"}}
)

// detectDistro reads /etc/os-release (ID and ID_LIKE) and, for Raspberry
// Pi OS (whose 64-bit edition says it is Debian), the device tree's model.
// An unknown distribution gets Debian's commands, which most of orch's
// users run, each saying so (translate).
func detectDistro(h Host) distro {
	release, _ := h.ReadFile("/etc/os-release")
	fields := parseOSRelease(release)
	ids := append([]string{fields["ID"]}, strings.Fields(fields["ID_LIKE"])...)
	has := func(names ...string) bool {
		return slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(names, id) })
	}
	var d distro
	switch {
	case has("alpine"):
		d = alpineFamily
	case has("fedora", "rhel", "centos", "rocky", "almalinux", "ol"):
		d = redHatFamily
	default:
		d = debianFamily
		if !has("debian", "ubuntu", "raspbian") {
			d.unknown = fields["ID"] // "" without an os-release: nothing to tell
		}
	}
	model, _ := h.ReadFile("/proc/device-tree/model")
	if fields["ID"] == "raspbian" || bytes.Contains(model, []byte("Raspberry Pi")) {
		d.raspberryPi = true
	}
	return d
}

// installCmd is the command that installs orch's packages names.
func (d distro) installCmd(names ...string) string {
	var pkgs []string
	for _, n := range names {
		pkgs = append(pkgs, d.pkgs[n])
	}
	return d.install + " " + strings.Join(pkgs, " ") + d.translate()
}

// translate tells the user of a distribution orch does not know that a
// command is Debian's.
func (d distro) translate() string {
	if d.unknown == "" {
		return ""
	}
	return " (Debian's command: this host runs " + d.unknown + ", use its package manager)"
}

// reinstallCmd is the command that installs orch's package name again.
func (d distro) reinstallCmd(name string) string {
	switch d.install {
	case "apt-get install":
		return "apt-get install --reinstall " + d.pkgs[name] + d.translate()
	case "dnf install":
		return "dnf reinstall " + d.pkgs[name]
	}
	return "apk fix " + d.pkgs[name]
}

// parseOSRelease parses os-release's KEY=value lines (values may be quoted).
func parseOSRelease(data []byte) map[string]string {
	out := map[string]string{}
	lines := bufio.NewScanner(bytes.NewReader(data))
	for lines.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(lines.Text()), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		out[key] = strings.Trim(value, `"'`)
	}
	return out
}
