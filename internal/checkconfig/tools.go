package checkconfig

import (
	"fmt"
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

// versionField returns the i-th word of the first line of out.
func versionField(out string, i int) string {
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if f := strings.Fields(first); i < len(f) {
		return f[i]
	}
	return strings.TrimSpace(first)
}
