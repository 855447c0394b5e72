package sysctls

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAllowlist(t *testing.T) {
	pod := func(hostNet, hostIPC bool, names ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &corev1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	recent, err := New("6.1.0-18-amd64", []string{"kernel.msg*", "net.core.somaxconn"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := New("4.4.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		a    *Allowlist
		pod  *corev1.Pod
		want string
	}{
		{"none", recent, &corev1.Pod{}, ""},
		{"safe", recent, pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.tcp_rmem"), ""},
		{"slashes", recent, pod(false, false, "net/ipv4/ip_local_port_range"), ""},
		{"unsafe allowed by pattern", recent, pod(false, false, "kernel.msgmax"), ""},
		{"unsafe allowed by name", recent, pod(false, false, "net.core.somaxconn"), ""},
		{"unsafe", recent, pod(false, false, "kernel.sem"), `forbidden sysctl: "kernel.sem" not allowlisted`},
		{"not namespaced on an old kernel", old, pod(false, false, "net.ipv4.tcp_rmem"), `forbidden sysctl: "net.ipv4.tcp_rmem" not allowlisted`},
		{"net with host network", recent, pod(true, false, "net.ipv4.tcp_syncookies"), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"ipc with host ipc", recent, pod(false, true, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
	} {
		if got := tc.a.Check(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := New("6.1.0", []string{"vm.overcommit_memory"}); err == nil || !strings.Contains(err.Error(), "not known to be namespaced") {
		t.Errorf("a host-wide sysctl was allowed: %v", err)
	}
}
