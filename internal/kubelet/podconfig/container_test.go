package podconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerConfig(t *testing.T) {
	pod := testPod()
	pod.Spec.TerminationGracePeriodSeconds = ptrTo(int64(30))
	pod.DeletionGracePeriodSeconds = ptrTo(int64(10))
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c", "echo $(GREETING) $$(GREETING) $(NOPE)"}
	c.Args = []string{"$(KUBERNETES_SERVICE_HOST)"}
	c.WorkingDir = "/work"
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	c.Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
	c.Resources = req(resources("cpu", "100m", "memory", "64Mi"), resources("cpu", "100m", "memory", "64Mi"))
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	src := &fakeSource{services: []*corev1.Service{svc("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Port: 443})}}
	in := Container{
		RestartCount: 3, ImageRef: "sha256:abc", PodIPs: []string{"10.42.0.7"},
		Volumes:      map[string]Volume{"data": {HostPath: "/var/lib/orch/agent/pods/1234-abcd/volumes/kubernetes.io~empty-dir/data"}},
		EtcHostsPath: "/var/lib/orch/agent/pods/1234-abcd/etc-hosts", TerminationLogPath: "/var/lib/orch/agent/pods/1234-abcd/containers/app/f00",
	}
	cfg, err := ContainerConfig(pod, c, testNode(), in, src)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 3 || cfg.Image.Image != "sha256:abc" || cfg.Image.UserSpecifiedImage != "busybox:1.36" {
		t.Errorf("metadata %v image %v", cfg.Metadata, cfg.Image)
	}
	if want := []string{"/bin/sh", "-c", "echo hello $(GREETING) $(NOPE)"}; !reflect.DeepEqual(cfg.Command, want) {
		t.Errorf("command %q, want %q", cfg.Command, want)
	}
	if want := []string{"10.43.0.1"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args %q, want %q", cfg.Args, want)
	}
	if cfg.WorkingDir != "/work" || !cfg.Stdin || !cfg.StdinOnce || !cfg.Tty || cfg.LogPath != "app/3.log" {
		t.Errorf("workdir %q stdin %v once %v tty %v log %q", cfg.WorkingDir, cfg.Stdin, cfg.StdinOnce, cfg.Tty, cfg.LogPath)
	}
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	if env["GREETING"] != "hello" || env["KUBERNETES_SERVICE_HOST"] != "10.43.0.1" {
		t.Errorf("env %v", env)
	}
	wantLabels := map[string]string{"io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "shop",
		"io.kubernetes.pod.uid": "1234-abcd", "io.kubernetes.container.name": "app"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels %v", cfg.Labels)
	}
	a := cfg.Annotations
	for k, v := range map[string]string{
		AnnotationRestartCount: "3", AnnotationTerminationMessagePath: "/dev/termination-log",
		AnnotationTerminationMessagePolicy: "File", AnnotationTerminationGracePeriod: "30", AnnotationDeletionGracePeriod: "10",
		AnnotationPreStopHandler: `{"exec":{"command":["sleep","5"]}}`,
		AnnotationPorts:          `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`,
	} {
		if a[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, a[k], v)
		}
	}
	if a[AnnotationHash] == "" {
		t.Error("no hash annotation")
	}
	wantMounts := []string{
		"/data<-/var/lib/orch/agent/pods/1234-abcd/volumes/kubernetes.io~empty-dir/data",
		"/etc/hosts<-/var/lib/orch/agent/pods/1234-abcd/etc-hosts",
		"/dev/termination-log<-/var/lib/orch/agent/pods/1234-abcd/containers/app/f00",
	}
	if got := mountStrings(cfg.Mounts); !reflect.DeepEqual(got, wantMounts) {
		t.Errorf("mounts %q, want %q", got, wantMounts)
	}
	if len(cfg.Devices) != 0 || cfg.Linux.Resources.OomScoreAdj != -997 || cfg.Linux.Resources.CpuShares != 102 ||
		cfg.Linux.Resources.MemoryLimitInBytes != 64<<20 || cfg.Linux.SecurityContext.RunAsUser.GetValue() != 0 {
		t.Errorf("devices %v linux %v", cfg.Devices, cfg.Linux)
	}

	t.Run("no command keeps the image's", func(t *testing.T) {
		p := pod.DeepCopy()
		p.Spec.Containers[0].Command, p.Spec.Containers[0].Args = nil, []string{}
		cfg, err := ContainerConfig(p, &p.Spec.Containers[0], testNode(), in, src)
		if err != nil || cfg.Command != nil || cfg.Args != nil {
			t.Errorf("command %q args %q err %v", cfg.GetCommand(), cfg.GetArgs(), err)
		}
	})
	t.Run("runAsNonRoot refuses a root image", func(t *testing.T) {
		p := pod.DeepCopy()
		p.Spec.SecurityContext.RunAsNonRoot = ptrTo(true)
		if _, err := ContainerConfig(p, &p.Spec.Containers[0], testNode(), in, src); !errors.Is(err, ErrInvalid) {
			t.Errorf("err = %v, want ErrInvalid", err)
		}
	})
	t.Run("debug container targets another's PID namespace", func(t *testing.T) {
		in := in
		in.TargetContainerID = "c0ffee"
		cfg, err := ContainerConfig(pod, c, testNode(), in, src)
		if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); err != nil || ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != "c0ffee" {
			t.Errorf("namespaces %v, err %v", ns, err)
		}
		p := pod.DeepCopy()
		p.Spec.ShareProcessNamespace = ptrTo(true)
		cfg, err = ContainerConfig(p, &p.Spec.Containers[0], testNode(), in, src)
		if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); err != nil || ns.Pid != runtimeapi.NamespaceMode_POD || ns.TargetId != "" {
			t.Errorf("shared PID namespace: namespaces %v, err %v", ns, err)
		}
	})
	t.Run("user namespaces are refused", func(t *testing.T) {
		p := pod.DeepCopy()
		p.Spec.HostUsers = ptrTo(false)
		if _, err := ContainerConfig(p, &p.Spec.Containers[0], testNode(), in, src); !errors.Is(err, ErrUnsupported) {
			t.Errorf("err = %v, want ErrUnsupported", err)
		}
		if _, err := SandboxConfig(p, testNode(), Sandbox{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("sandbox err = %v, want ErrUnsupported", err)
		}
	})
	t.Run("environment errors stop it", func(t *testing.T) {
		if _, err := ContainerConfig(pod, c, testNode(), in, &fakeSource{err: errors.New("down")}); err == nil {
			t.Error("no error")
		}
	})
}

func mountStrings(ms []*runtimeapi.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ContainerPath+"<-"+m.HostPath)
	}
	return out
}

func TestMounts(t *testing.T) {
	bidi, h2c, bad := corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationMode("Sideways")
	rroOn, rroIf := corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible
	vols := map[string]Volume{"data": {HostPath: "/v/data"}, "ro": {HostPath: "/v/ro", ReadOnly: true}}
	env := map[string]string{"POD": "web-0", "EMPTY": ""}
	for _, tc := range []struct {
		name    string
		mounts  []corev1.VolumeMount
		in      Container
		hostNet bool
		want    []*runtimeapi.Mount
		wantErr string
	}{
		{name: "no mounts, no pod IP: no /etc/hosts", in: Container{EtcHostsPath: "/p/etc-hosts"}, want: []*runtimeapi.Mount{}},
		{name: "host network gets /etc/hosts without pod IPs", hostNet: true, in: Container{EtcHostsPath: "/p/etc-hosts"},
			want: []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/p/etc-hosts"}}},
		{name: "own /etc/hosts mount wins", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/etc/hosts", SubPath: "hosts"}},
			in:   Container{EtcHostsPath: "/p/etc-hosts", PodIPs: []string{"10.42.0.7"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/v/data/hosts"}}},
		{name: "read-only, propagation, relative path", mounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "a/b", ReadOnly: true},
			{Name: "ro", MountPath: "/ro", MountPropagation: &h2c},
			{Name: "data", MountPath: "/bidi", MountPropagation: &bidi},
		}, want: []*runtimeapi.Mount{
			{ContainerPath: "/a/b", HostPath: "/v/data", Readonly: true},
			{ContainerPath: "/ro", HostPath: "/v/ro", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
			{ContainerPath: "/bidi", HostPath: "/v/data", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
		}},
		{name: "subPathExpr", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(POD)"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/logs", HostPath: "/v/data/logs/web-0"}}},
		{name: "subPathExpr with a missing var", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPathExpr: "$(NOPE)/$(EMPTY)"}},
			wantErr: "missing value for EMPTY, NOPE"},
		{name: "absolute subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "/etc"}}, wantErr: "must not be an absolute path"},
		{name: "subPath with ..", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "a/../../etc"}}, wantErr: "must not contain '..'"},
		{name: "subPath with .. in a name is fine", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "a..b"}},
			want: []*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/v/data/a..b"}}},
		{name: "unknown volume", mounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}, wantErr: `cannot find volume "nope"`},
		{name: "bad propagation", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", MountPropagation: &bad}}, wantErr: "invalid MountPropagation"},
		{name: "recursive read-only if possible, unsupported", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", ReadOnly: true, RecursiveReadOnly: &rroIf}},
			want: []*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/v/data", Readonly: true}}},
		{name: "recursive read-only enabled, supported", in: Container{RecursiveReadOnly: true},
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", ReadOnly: true, RecursiveReadOnly: &rroOn}},
			want:   []*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/v/data", Readonly: true, RecursiveReadOnly: true}}},
		{name: "recursive read-only enabled, unsupported", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", ReadOnly: true, RecursiveReadOnly: &rroOn}},
			wantErr: "does not support"},
		{name: "recursive read-only on a writable mount", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/x", RecursiveReadOnly: &rroIf}},
			wantErr: "not read-only"},
		{name: "termination log only with a path", in: Container{TerminationLogPath: "/p/tl"}, want: []*runtimeapi.Mount{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.HostNetwork = tc.hostNet
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = tc.mounts
			if tc.name == "termination log only with a path" {
				c.TerminationMessagePath = ""
			}
			tc.in.Volumes = vols
			got, err := Mounts(pod, c, tc.in, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].String() != tc.want[i].String() {
					t.Errorf("mount %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestContainerHash(t *testing.T) {
	a := &corev1.Container{Name: "app", Image: "busybox:1.36"}
	b := a.DeepCopy()
	b.Env = []corev1.EnvVar{{Name: "X", Value: "y"}}
	b.Resources = req(resources("cpu", "1"), nil)
	if ContainerHash(a) != ContainerHash(b) {
		t.Error("hash depends on more than name and image")
	}
	c := a.DeepCopy()
	c.Image = "busybox:1.37"
	if ContainerHash(a) == ContainerHash(c) {
		t.Error("hash ignores the image")
	}
	// Pinned against regressions; computed the way upstream's
	// kubecontainer.HashContainer does (FNV-32a over k8s.io/utils/dump.ForHash
	// of the JSON of name and image), not checked against a running kubelet.
	if h := ContainerHash(a); h != 0x395745 {
		t.Errorf("hash %x, want 395745", h)
	}
}
