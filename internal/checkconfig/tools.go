package checkconfig

import (
	"fmt"
	"path/filepath"
	"strings"
)

// checkIPTables: orch's Service proxy and pod masquerading program
// iptables (iptables-restore and iptables-save); either backend works.
func checkIPTables(h Host, d distro) []Result {
	install := d.installCmd(pkgIPTables) + " (orch's Service proxy and pod masquerading program iptables)"
	ipt := Result{Name: "iptables"}
	path, err := h.LookPath("iptables")
	if err != nil {
		ipt.Status, ipt.Found, ipt.Fix = Missing, "not found on PATH", install
		return []Result{ipt, checkOnPath(h, "iptables-restore, iptables-save", install, "iptables-restore", "iptables-save")}
	}
	backend := ""
	out, err := h.Output(path, "--version")
	if err != nil {
		ipt.Status, ipt.Found = Warning, fmt.Sprintf("%s, but `iptables --version` failed: %v: %s", path, err, strings.TrimSpace(out))
		ipt.Fix = "make iptables run (try iptables --version), or reinstall it: " + d.reinstallCmd(pkgIPTables)
	} else {
		// "iptables v1.8.9 (nf_tables)"; before 1.8 there was no backend and it was legacy.
		version := versionField(out, 1)
		backend = "legacy"
		if strings.Contains(out, "nf_tables") {
			backend = "nf_tables"
		}
		ipt.Status, ipt.Found = OK, fmt.Sprintf("%s, %s backend (%s)", version, backend, path)
	}
	rs := []Result{ipt, checkOnPath(h, "iptables-restore, iptables-save", install, "iptables-restore", "iptables-save")}
	if r, ok := checkMixedBackends(h, backend); ok {
		rs = append(rs, r)
	}
	return rs
}

// checkMixedBackends warns when the backend iptables does not use holds
// rules: packets pass both, so those rules can drop what orch allows.
// ok is false when there is nothing to compare (no other backend's tools).
func checkMixedBackends(h Host, backend string) (Result, bool) {
	other, save := "legacy", "iptables-legacy-save"
	switch backend {
	case "nf_tables":
	case "legacy":
		other, save = "nf_tables", "iptables-nft-save"
	default:
		return Result{}, false
	}
	path, err := h.LookPath(save)
	if err != nil {
		return Result{}, false
	}
	r := Result{Name: "iptables backends"}
	out, err := h.Output(path)
	if err != nil {
		r.Status, r.Found = Warning, fmt.Sprintf("could not list the %s rules: %s: %v", other, save, err)
		r.Fix = "run " + save + " to check that no rules are left in the " + other + " backend"
		return r, true
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "-A ") {
			n++
		}
	}
	if n == 0 {
		r.Status, r.Found = OK, "only "+backend+" in use (no "+other+" rules)"
		return r, true
	}
	r.Status, r.Found = Warning, fmt.Sprintf("%d rules in the %s backend while iptables uses %s", n, other, backend)
	r.Fix = fmt.Sprintf("use one backend: remove the %s rules (%s shows them; they are often left by an older firewall or "+
		"Docker) or switch iptables to %s (update-alternatives --set iptables /usr/sbin/iptables-%s); packets pass both, so "+
		"those rules can drop traffic orch allows", other, save, other, strings.TrimSuffix(strings.TrimPrefix(save, "iptables-"), "-save"))
	return r, true
}

// checkOnPath reports whether all the commands are on PATH.
func checkOnPath(h Host, name, fix string, commands ...string) Result {
	var found, missing []string
	for _, c := range commands {
		if p, err := h.LookPath(c); err == nil {
			found = append(found, p)
		} else {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return Result{Name: name, Status: Missing, Found: "not on PATH: " + strings.Join(missing, ", "), Fix: fix}
	}
	return Result{Name: name, Status: OK, Found: strings.Join(found, ", ")}
}

// checkContainerd: the agent starts containerd (with its runc shim)
// unless --container-runtime-endpoint names a running CRI runtime.
func checkContainerd(h Host, d distro) Result {
	fix := d.installCmd(pkgContainerd, pkgRunc) + ", or run agents with --container-runtime-endpoint set to the socket of a CRI runtime you run yourself"
	r := checkBinary(h, "containerd", fix, d.reinstallCmd(pkgContainerd), func(out string) string {
		return versionField(out, 2) // "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"
	})
	if r.Status == OK {
		if _, err := h.LookPath("containerd-shim-runc-v2"); err != nil {
			r.Status, r.Found = Missing, r.Found+", but no containerd-shim-runc-v2 on PATH"
			r.Fix = "install containerd's runc shim, containerd-shim-runc-v2 (" + d.reinstallCmd(pkgContainerd) + ")"
		}
	}
	return r
}

// checkRunc: containerd runs every container with runc.
func checkRunc(h Host, d distro) Result {
	return checkBinary(h, "runc", d.installCmd(pkgRunc), d.reinstallCmd(pkgRunc), func(out string) string {
		return versionField(out, 2) // "runc version 1.1.5+ds1\ncommit: ..."
	})
}

// checkBinary finds name on PATH and reports its version (name --version).
func checkBinary(h Host, name, installFix, reinstallFix string, parse func(string) string) Result {
	r := Result{Name: name}
	path, err := h.LookPath(name)
	if err != nil {
		r.Status, r.Found, r.Fix = Missing, "not found on PATH", installFix
		return r
	}
	out, err := h.Output(path, "--version")
	if err != nil {
		r.Status, r.Found = Warning, fmt.Sprintf("%s, but `%s --version` failed: %v: %s", path, name, err, strings.TrimSpace(out))
		r.Fix = "make " + name + " run (try " + name + " --version), or " + reinstallFix
		return r
	}
	r.Status, r.Found = OK, parse(out)+" ("+path+")"
	return r
}

// versionField returns the i-th word of the first line of out.
func versionField(out string, i int) string {
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if f := strings.Fields(first); i < len(f) {
		return f[i]
	}
	return strings.TrimSpace(first)
}

// cniPlugins are the CNI plugins orch's pod network uses (the bridge
// conflist of internal/network, and containerd's loopback).
var cniPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// otherCNIDir is where upstream's CNI release tarballs put the plugins.
const otherCNIDir = "/opt/cni/bin"

// checkCNI: the plugins must be in dir, where orch's containerd looks;
// when they are all in one other place (upstream's tarballs', or the
// distribution package's), the fix links them.
func checkCNI(h Host, dir string, d distro) Result {
	r := Result{Name: "CNI plugins"}
	var missing []string
	elsewhere := map[string][]string{}
	for _, p := range cniPlugins {
		if h.Exists(filepath.Join(dir, p)) {
			continue
		}
		missing = append(missing, p)
		for _, other := range []string{otherCNIDir, d.cniDir} {
			if other != dir && h.Exists(filepath.Join(other, p)) {
				elsewhere[other] = append(elsewhere[other], p)
			}
		}
	}
	if len(missing) == 0 {
		r.Status, r.Found = OK, strings.Join(cniPlugins, ", ")+" in "+dir
		return r
	}
	r.Status, r.Found = Missing, "not in "+dir+": "+strings.Join(missing, ", ")
	r.Fix = d.installCmd(pkgCNI) + " (it installs them in " + d.cniDir + ")"
	if d.cniDir != dir {
		r.Fix += fmt.Sprintf(", then link them where orch's containerd looks (mkdir -p %s && ln -s %s/* %s/)", dir, d.cniDir, dir)
	}
	for _, other := range []string{otherCNIDir, d.cniDir} {
		if other != dir && len(elsewhere[other]) == len(missing) {
			r.Found += " (they are in " + other + ")"
			r.Fix = fmt.Sprintf("orch's containerd looks in %s: link them there (mkdir -p %s && ln -s %s/* %s/)", dir, dir, other, dir)
			break
		}
	}
	return r
}
