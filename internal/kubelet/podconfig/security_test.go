package podconfig

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNamespaceOptions(t *testing.T) {
	const pod, node, ctr = runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE, runtimeapi.NamespaceMode_CONTAINER
	for _, tc := range []struct {
		name              string
		spec              corev1.PodSpec
		network, pid, ipc runtimeapi.NamespaceMode
	}{
		{"default", corev1.PodSpec{}, pod, ctr, pod},
		{"host network", corev1.PodSpec{HostNetwork: true}, node, ctr, pod},
		{"host PID", corev1.PodSpec{HostPID: true}, pod, node, pod},
		{"host IPC", corev1.PodSpec{HostIPC: true}, pod, ctr, node},
		{"share process namespace", corev1.PodSpec{ShareProcessNamespace: ptrTo(true)}, pod, pod, pod},
		{"share false", corev1.PodSpec{ShareProcessNamespace: ptrTo(false)}, pod, ctr, pod},
		{"host PID wins over sharing", corev1.PodSpec{HostPID: true, ShareProcessNamespace: ptrTo(true)}, pod, node, pod},
	} {
		got := NamespaceOptions(&corev1.Pod{Spec: tc.spec})
		if got.Network != tc.network || got.Pid != tc.pid || got.Ipc != tc.ipc {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}

func TestImageUser(t *testing.T) {
	for _, tc := range []struct {
		in   string
		uid  int64
		name string
		nil_ bool
	}{
		{in: "", nil_: true},
		{in: "0", uid: 0},
		{in: "1000", uid: 1000},
		{in: "1000:1000", uid: 1000},
		{in: "nobody", nil_: true, name: "nobody"},
		{in: "app:staff", nil_: true, name: "app"},
		{in: ":100", nil_: true},
	} {
		uid, name := ImageUser(tc.in)
		if (uid == nil) != tc.nil_ || (uid != nil && *uid != tc.uid) || name != tc.name {
			t.Errorf("ImageUser(%q) = %v, %q", tc.in, uid, name)
		}
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		podSC     *corev1.PodSecurityContext
		ctrSC     *corev1.SecurityContext
		imageUser string
		wantErr   string
	}{
		{name: "not asked", imageUser: ""},
		{name: "asked false", ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(false)}},
		{name: "image root by default", ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}, wantErr: "will run as root"},
		{name: "image uid 0", ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}, imageUser: "0:0", wantErr: "will run as root"},
		{name: "image uid 1000", ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}, imageUser: "1000"},
		{name: "image user name", podSC: &corev1.PodSecurityContext{RunAsNonRoot: ptrTo(true)}, imageUser: "nobody", wantErr: "non-numeric user (nobody)"},
		{name: "runAsUser 0", podSC: &corev1.PodSecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(0))}, imageUser: "1000", wantErr: "breaks non-root policy"},
		{name: "pod runAsUser beats image", podSC: &corev1.PodSecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(1000))}},
		{name: "container runAsUser 0 beats pod's", podSC: &corev1.PodSecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo(int64(1000))},
			ctrSC: &corev1.SecurityContext{RunAsUser: ptrTo(int64(0))}, wantErr: "breaks non-root policy"},
		{name: "container turns it off", podSC: &corev1.PodSecurityContext{RunAsNonRoot: ptrTo(true)}, ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(false)}},
		{name: "uid too large", ctrSC: &corev1.SecurityContext{RunAsNonRoot: ptrTo(true)}, imageUser: "4294967296", wantErr: "invalid user id"},
	} {
		pod := testPod()
		pod.Spec.SecurityContext = tc.podSC
		pod.Spec.Containers[0].SecurityContext = tc.ctrSC
		uid, name := ImageUser(tc.imageUser)
		err := VerifyRunAsNonRoot(pod, &pod.Spec.Containers[0], uid, name)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestContainerSecurityContext(t *testing.T) {
	unmasked := corev1.UnmaskedProcMount
	localhost := "profiles/strict.json"
	for _, tc := range []struct {
		name      string
		podSC     *corev1.PodSecurityContext
		ctrSC     *corev1.SecurityContext
		ann       map[string]string
		node      Node
		imageUser string
		check     func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext)
		wantErr   string
	}{
		{name: "defaults", check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser.GetValue() != 0 || sc.RunAsUser == nil || sc.RunAsUsername != "" {
				t.Errorf("user = %v %q, want 0 (image without a user)", sc.RunAsUser, sc.RunAsUsername)
			}
			if sc.Privileged || sc.ReadonlyRootfs || sc.NoNewPrivs || sc.Capabilities != nil || sc.RunAsGroup != nil {
				t.Errorf("unexpected settings %v", sc)
			}
			if !reflect.DeepEqual(sc.MaskedPaths, defaultMaskedPaths) || !reflect.DeepEqual(sc.ReadonlyPaths, defaultReadonlyPaths) {
				t.Errorf("masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
			}
			if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined || sc.Apparmor != nil || sc.ApparmorProfile != "" {
				t.Errorf("seccomp %v apparmor %v %q", sc.Seccomp, sc.Apparmor, sc.ApparmorProfile)
			}
			if sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_CONTAINER {
				t.Errorf("namespaces %v", sc.NamespaceOptions)
			}
		}},
		{name: "image user", imageUser: "nobody", check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser != nil || sc.RunAsUsername != "nobody" {
				t.Errorf("user = %v %q", sc.RunAsUser, sc.RunAsUsername)
			}
		}},
		{name: "image uid", imageUser: "1000:1000", check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup != nil {
				t.Errorf("user = %v group %v", sc.RunAsUser, sc.RunAsGroup)
			}
		}},
		{name: "pod and container settings merge", imageUser: "nobody",
			podSC: &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(3000)), FSGroup: ptrTo(int64(2000)),
				SupplementalGroups: []int64{4000, 5000}, SupplementalGroupsPolicy: ptrTo(corev1.SupplementalGroupsPolicyStrict),
				SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1"}},
			ctrSC: &corev1.SecurityContext{RunAsUser: ptrTo(int64(1001)), ReadOnlyRootFilesystem: ptrTo(true),
				AllowPrivilegeEscalation: ptrTo(false),
				Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser.GetValue() != 1001 || sc.RunAsUsername != "" || sc.RunAsGroup.GetValue() != 3000 {
					t.Errorf("user %v %q group %v", sc.RunAsUser, sc.RunAsUsername, sc.RunAsGroup)
				}
				if !reflect.DeepEqual(sc.SupplementalGroups, []int64{2000, 4000, 5000}) || sc.SupplementalGroupsPolicy != runtimeapi.SupplementalGroupsPolicy_Strict {
					t.Errorf("groups %v policy %v", sc.SupplementalGroups, sc.SupplementalGroupsPolicy)
				}
				if !sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.SelinuxOptions.GetLevel() != "s0:c1" {
					t.Errorf("rootfs %v nnp %v selinux %v", sc.ReadonlyRootfs, sc.NoNewPrivs, sc.SelinuxOptions)
				}
				if !reflect.DeepEqual(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !reflect.DeepEqual(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
					t.Errorf("capabilities %v", sc.Capabilities)
				}
			}},
		{name: "allowPrivilegeEscalation true", ctrSC: &corev1.SecurityContext{AllowPrivilegeEscalation: ptrTo(true)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.NoNewPrivs {
					t.Error("no_new_privs set")
				}
			}},
		{name: "empty capabilities are empty lists", ctrSC: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Capabilities == nil || sc.Capabilities.AddCapabilities == nil || len(sc.Capabilities.AddCapabilities) != 0 {
					t.Errorf("capabilities %#v", sc.Capabilities)
				}
			}},
		{name: "privileged keeps masked paths (the runtime drops them)", ctrSC: &corev1.SecurityContext{Privileged: ptrTo(true)},
			node: Node{ExtraMaskedPaths: []string{"/sys/devices/system/cpu/cpu0/thermal_throttle"}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !sc.Privileged || len(sc.MaskedPaths) != len(defaultMaskedPaths)+1 {
					t.Errorf("privileged %v masked %v", sc.Privileged, sc.MaskedPaths)
				}
			}},
		{name: "unmasked proc", ctrSC: &corev1.SecurityContext{ProcMount: &unmasked},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
					t.Errorf("masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
				}
			}},
		{name: "seccomp default from the kubelet", node: Node{SeccompDefault: true},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp %v", sc.Seccomp)
				}
			}},
		{name: "seccomp: container beats pod", node: Node{SeccompProfileRoot: "/var/lib/orch/agent/seccomp"},
			podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			ctrSC: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &localhost}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Localhost || sc.Seccomp.LocalhostRef != "/var/lib/orch/agent/seccomp/profiles/strict.json" {
					t.Errorf("seccomp %v", sc.Seccomp)
				}
			}},
		{name: "seccomp from pod", podSC: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp %v", sc.Seccomp)
				}
			}},
		{name: "seccomp explicit Unconfined beats seccomp default", node: Node{SeccompDefault: true},
			ctrSC: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
					t.Errorf("seccomp %v", sc.Seccomp)
				}
			}},
		{name: "seccomp localhost outside the profile root", node: Node{SeccompProfileRoot: "/var/lib/orch/agent/seccomp"},
			ctrSC:   &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("../../../../etc/shadow")}},
			wantErr: `localhostProfile "../../../../etc/shadow" is outside the seccomp profile root`},
		{name: "seccomp localhost without a profile", ctrSC: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}},
			wantErr: "localhostProfile must be set"},
		{name: "apparmor from pod field", podSC: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault || sc.ApparmorProfile != "runtime/default" {
					t.Errorf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
				}
			}},
		{name: "apparmor annotation beats pod field", ann: map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-deny"},
			podSC: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.Apparmor.LocalhostRef != "k8s-deny" || sc.ApparmorProfile != "localhost/k8s-deny" {
					t.Errorf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
				}
			}},
		{name: "apparmor container field beats annotation", ann: map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "localhost/k8s-deny"},
			ctrSC: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_Unconfined || sc.ApparmorProfile != "unconfined" {
					t.Errorf("apparmor %v %q", sc.Apparmor, sc.ApparmorProfile)
				}
			}},
		{name: "bad supplementalGroupsPolicy", podSC: &corev1.PodSecurityContext{SupplementalGroupsPolicy: ptrTo(corev1.SupplementalGroupsPolicy("Loose"))},
			wantErr: "supplementalGroupsPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Annotations = tc.ann
			pod.Spec.SecurityContext = tc.podSC
			pod.Spec.Containers[0].SecurityContext = tc.ctrSC
			uid, name := ImageUser(tc.imageUser)
			sc, err := ContainerSecurityContext(pod, &pod.Spec.Containers[0], tc.node, uid, name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, sc)
		})
	}
}
