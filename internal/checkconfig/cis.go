package checkconfig

import (
	"crypto/tls"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// The statuses of the CIS checks (orch check-config --cis), as
// kube-bench prints them.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Warn Status = "WARN"
)

// CISFacts are what the CIS checks look at on a node: the flags in
// effect of the orch server (and its agent) as orch parses them (config
// file included), the modes of its files, and how its ports answer a
// caller without credentials. The CLI gathers them; CIS only judges.
type CISFacts struct {
	// Server is false on a node that runs no orch server (an agent
	// only): the control plane items are then not checked.
	Server bool
	// Files are the files whose permissions the benchmark names.
	Files []FileFact
	// AdmissionPlugins are the plugins in effect; PodSecurityDefault is
	// the cluster's default enforce level ("privileged" unless the
	// config file says otherwise).
	AdmissionPlugins   []string
	PodSecurityDefault string
	// SecretsEncrypted says how Secrets are encrypted at rest ("" when
	// they are not).
	SecretsEncrypted string
	// AuditLog is the audit log path ("" when there is none).
	AuditLog       string
	RequestTimeout time.Duration
	// TLSMinVersion and CipherSuites are what 6443 and 10250 accept.
	TLSMinVersion uint16
	CipherSuites  []uint16
	// AnonymousAPI and AnonymousKubelet are the HTTP status of a request
	// without credentials to /api on 6443 and /pods on 10250 (0: the
	// port did not answer).
	AnonymousAPI, AnonymousKubelet int
	SeccompDefault                 bool
	ProtectKernelDefaults          bool
}

// FileFact is one file (or directory) and the most its mode may allow.
type FileFact struct {
	Item, What, Path string
	Exists           bool
	Mode             fs.FileMode
	Max              fs.FileMode
}

// CIS judges the automatable items of the CIS Kubernetes Benchmark that
// apply to orch, each named by its benchmark section (item numbers move
// between versions of the benchmark; docs/security.md maps them): FAIL for what orch
// does by default and is undone here, WARN for what is a choice the
// benchmark recommends (with the flag that makes it), PASS otherwise.
func CIS(f CISFacts) []Result {
	var rs []Result
	for _, file := range f.Files {
		rs = append(rs, fileResult(file))
	}
	if f.Server {
		rs = append(rs, cisControlPlane(f)...)
	}
	rs = append(rs, cisKubelet(f)...)
	return rs
}

func fileResult(f FileFact) Result {
	name := f.Item + " " + f.What + " permissions"
	switch {
	case !f.Exists:
		return Result{Name: name, Status: Warn, Found: f.Path + " does not exist", Fix: "run the check on a node where orch runs (or give --data-dir)"}
	case f.Mode.Perm()&^f.Max != 0:
		return Result{Name: name, Status: Fail, Found: fmt.Sprintf("%s is %04o", f.Path, f.Mode.Perm()),
			Fix: fmt.Sprintf("chmod %04o %s (orch makes it so; something changed it)", f.Max, f.Path)}
	}
	return Result{Name: name, Status: Pass, Found: fmt.Sprintf("%s is %04o", f.Path, f.Mode.Perm())}
}

func cisControlPlane(f CISFacts) []Result {
	plugin := func(item, name string, wanted Status, fix string) Result {
		r := Result{Name: item + " admission plugin " + name, Status: Pass, Found: "enabled"}
		if !slices.Contains(f.AdmissionPlugins, name) {
			r.Status, r.Found, r.Fix = wanted, "disabled", fix
		}
		return r
	}
	rs := []Result{
		anonymous("1.2 anonymous requests to the apiserver", f.AnonymousAPI, "6443"),
		plugin("1.2", "AlwaysPullImages", Warn, "--enable-admission-plugins=AlwaysPullImages (a pod then cannot use an image pulled with another pod's credentials)"),
		plugin("1.2", "ServiceAccount", Fail, "remove ServiceAccount from --disable-admission-plugins"),
		plugin("1.2", "NamespaceLifecycle", Fail, "remove NamespaceLifecycle from --disable-admission-plugins"),
		plugin("1.2", "NodeRestriction", Fail, "remove NodeRestriction from --disable-admission-plugins"),
		plugin("5.2", "PodSecurity", Fail, "remove PodSecurity from --disable-admission-plugins"),
	}
	ps := Result{Name: "5.2 Pod Security default level", Status: Pass, Found: "enforce=" + f.PodSecurityDefault}
	if f.PodSecurityDefault == "privileged" || f.PodSecurityDefault == "" {
		ps.Status, ps.Found = Warn, "enforce=privileged (upstream's default): namespaces without pod-security.kubernetes.io labels accept any pod"
		ps.Fix = "label namespaces pod-security.kubernetes.io/enforce=baseline (or restricted), or set a default in --pod-security-admission-config-file"
	}
	rs = append(rs, ps)
	audit := Result{Name: "1.2 audit log", Status: Pass, Found: f.AuditLog}
	if f.AuditLog == "" {
		audit.Status, audit.Found = Warn, "off (upstream's default)"
		audit.Fix = "--audit-policy-file=FILE --audit-log-path=PATH --audit-log-maxage=30 --audit-log-maxbackup=10 --audit-log-maxsize=100"
	}
	timeout := Result{Name: "1.2 request timeout", Status: Pass, Found: f.RequestTimeout.String()}
	if f.RequestTimeout <= 0 {
		timeout.Status, timeout.Found, timeout.Fix = Fail, "none: a request may hold the apiserver forever", "remove --request-timeout=0 (the default is 1m)"
	}
	enc := Result{Name: "1.2 encryption of Secrets at rest", Status: Pass, Found: f.SecretsEncrypted}
	if f.SecretsEncrypted == "" {
		enc.Status, enc.Found = Warn, "off (upstream's default): Secrets are plain in etcd and in its snapshots"
		enc.Fix = "start the servers with --secrets-encryption (or --encryption-provider-config=FILE)"
	}
	rs = append(rs, audit, timeout, enc, tlsResult("1.2 TLS of the apiserver and kubelet", f))
	return rs
}

func cisKubelet(f CISFacts) []Result {
	rs := []Result{anonymous("4.2 anonymous requests to the kubelet", f.AnonymousKubelet, "10250")}
	kernel := Result{Name: "4.2 protect kernel defaults", Status: Pass, Found: "on"}
	if !f.ProtectKernelDefaults {
		kernel.Status, kernel.Found = Warn, "off: the agent sets the kernel tunables the kubelet needs at start"
		kernel.Fix = "set them in /etc/sysctl.d (orch agent's log lists them) and start with --protect-kernel-defaults"
	}
	seccomp := Result{Name: "5.7 seccomp default", Status: Pass, Found: "RuntimeDefault for containers without a profile"}
	if !f.SeccompDefault {
		seccomp.Status, seccomp.Found = Warn, "off (upstream's default): containers without a profile run unconfined"
		seccomp.Fix = "--seccomp-default on every node"
	}
	return append(rs, kernel, seccomp)
}

func anonymous(name string, status int, port string) Result {
	switch status {
	case 401, 403:
		return Result{Name: name, Status: Pass, Found: fmt.Sprintf("refused (%d)", status)}
	case 0:
		return Result{Name: name, Status: Warn, Found: "port " + port + " did not answer", Fix: "run the check where orch runs"}
	}
	return Result{Name: name, Status: Fail, Found: fmt.Sprintf("answered %d to a request without credentials", status),
		Fix: "something in front of port " + port + " lets anonymous requests through; orch refuses them"}
}

func tlsResult(name string, f CISFacts) Result {
	var weak []string
	for _, id := range f.CipherSuites {
		n := tls.CipherSuiteName(id)
		if !strings.Contains(n, "_GCM_") && !strings.Contains(n, "CHACHA20_POLY1305") {
			weak = append(weak, n)
		}
	}
	found := fmt.Sprintf("%s and up, %d suites", tls.VersionName(f.TLSMinVersion), len(f.CipherSuites))
	switch {
	case f.TLSMinVersion < tls.VersionTLS12:
		return Result{Name: name, Status: Fail, Found: found, Fix: "--tls-min-version=VersionTLS12 (or VersionTLS13)"}
	case len(weak) > 0:
		return Result{Name: name, Status: Fail, Found: "suites without AEAD: " + strings.Join(weak, ", "), Fix: "leave --tls-cipher-suites out (AEAD suites only) or name only GCM and ChaCha20-Poly1305 suites"}
	}
	return Result{Name: name, Status: Pass, Found: found}
}

// WriteCIS prints the items as Write does, with a summary of them.
func WriteCIS(w io.Writer, rs []Result) error {
	if err := writeLines(w, rs); err != nil {
		return err
	}
	counts := map[Status]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	_, err := fmt.Fprintf(w, "\n%d PASS, %d WARN, %d FAIL (WARN: a choice the benchmark recommends, with the flag that makes it; FAIL: orch's default was undone)\n",
		counts[Pass], counts[Warn], counts[Fail])
	return err
}

// FailedCIS reports whether any CIS item failed.
func FailedCIS(rs []Result) bool {
	return slices.ContainsFunc(rs, func(r Result) bool { return r.Status == Fail })
}
