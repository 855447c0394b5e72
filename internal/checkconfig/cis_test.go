package checkconfig

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"
)

// defaultFacts are what a default install shows.
func defaultFacts() CISFacts {
	return CISFacts{
		Server: true,
		Files: []FileFact{
			{Item: "1.1", What: "admin kubeconfig", Path: "/etc/orch/orch.yaml", Exists: true, Mode: 0o600, Max: 0o600},
			{Item: "1.1", What: "etcd data directory", Path: "/var/lib/orch/server/db/etcd", Exists: true, Mode: 0o700, Max: 0o700},
		},
		AdmissionPlugins:   []string{"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "PodSecurity", "ResourceQuota"},
		PodSecurityDefault: "privileged",
		RequestTimeout:     time.Minute,
		TLSMinVersion:      tls.VersionTLS12,
		CipherSuites:       []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
		AnonymousAPI:       401, AnonymousKubelet: 401,
	}
}

func TestCIS(t *testing.T) {
	if rs := CIS(defaultFacts()); FailedCIS(rs) {
		t.Errorf("a default install fails:\n%v", rs)
	}
	for _, tc := range []struct {
		name   string
		change func(*CISFacts)
		item   string
		want   Status
	}{
		{"kubeconfig readable by all", func(f *CISFacts) { f.Files[0].Mode = 0o644 }, "1.1 admin kubeconfig permissions", Fail},
		{"etcd dir missing", func(f *CISFacts) { f.Files[1].Exists = false }, "1.1 etcd data directory permissions", Warn},
		{"anonymous api", func(f *CISFacts) { f.AnonymousAPI = 200 }, "1.2 anonymous requests to the apiserver", Fail},
		{"apiserver down", func(f *CISFacts) { f.AnonymousAPI = 0 }, "1.2 anonymous requests to the apiserver", Warn},
		{"anonymous kubelet", func(f *CISFacts) { f.AnonymousKubelet = 200 }, "4.2 anonymous requests to the kubelet", Fail},
		{"no NodeRestriction", func(f *CISFacts) { f.AdmissionPlugins = []string{"PodSecurity"} }, "1.2 admission plugin NodeRestriction", Fail},
		{"no PodSecurity", func(f *CISFacts) { f.AdmissionPlugins = []string{"NodeRestriction"} }, "5.2 admission plugin PodSecurity", Fail},
		{"AlwaysPullImages off", func(f *CISFacts) {}, "1.2 admission plugin AlwaysPullImages", Warn},
		{"AlwaysPullImages on", func(f *CISFacts) { f.AdmissionPlugins = append(f.AdmissionPlugins, "AlwaysPullImages") }, "1.2 admission plugin AlwaysPullImages", Pass},
		{"baseline default", func(f *CISFacts) { f.PodSecurityDefault = "baseline" }, "5.2 Pod Security default level", Pass},
		{"no timeout", func(f *CISFacts) { f.RequestTimeout = 0 }, "1.2 request timeout", Fail},
		{"audit off", func(f *CISFacts) {}, "1.2 audit log", Warn},
		{"audit on", func(f *CISFacts) { f.AuditLog = "/var/log/orch/audit.log" }, "1.2 audit log", Pass},
		{"encryption on", func(f *CISFacts) { f.SecretsEncrypted = "aescbc" }, "1.2 encryption of Secrets at rest", Pass},
		{"TLS 1.0", func(f *CISFacts) { f.TLSMinVersion = tls.VersionTLS10 }, "1.2 TLS of the apiserver and kubelet", Fail},
		{"CBC suite", func(f *CISFacts) { f.CipherSuites = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA} }, "1.2 TLS of the apiserver and kubelet", Fail},
		{"seccomp default", func(f *CISFacts) { f.SeccompDefault = true }, "5.7 seccomp default", Pass},
		{"kernel defaults", func(f *CISFacts) {}, "4.2 protect kernel defaults", Warn},
		{"agent only", func(f *CISFacts) { f.Server = false; f.AnonymousAPI = 200 }, "4.2 anonymous requests to the kubelet", Pass},
	} {
		f := defaultFacts()
		tc.change(&f)
		rs := CIS(f)
		var got *Result
		for i := range rs {
			if rs[i].Name == tc.item {
				got = &rs[i]
			}
			if !f.Server && strings.HasPrefix(rs[i].Name, "1.2") {
				t.Errorf("%s: a node without a server gets control plane item %s", tc.name, rs[i].Name)
			}
		}
		if got == nil {
			t.Errorf("%s: no item %q", tc.name, tc.item)
			continue
		}
		if got.Status != tc.want || (got.Status != Pass && got.Fix == "") {
			t.Errorf("%s: %s is %s (%s; fix %q), want %s", tc.name, tc.item, got.Status, got.Found, got.Fix, tc.want)
		}
	}
}
