package podconfig

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfig(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8080, HostPort: 80, Protocol: corev1.ProtocolTCP},
		{Name: "http", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}, // same name: dropped
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "fd00::1", HostPort: 53},
		{ContainerPort: 9000, Protocol: corev1.ProtocolSCTP},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side",
		Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 9090}}, // other container: kept
		SecurityContext: &corev1.SecurityContext{Privileged: ptrTo(true)}})
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1}}}}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(3000)), FSGroup: ptrTo(int64(2000)),
		SupplementalGroups: []int64{4000}, Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
	}
	dns := &runtimeapi.DNSConfig{Servers: []string{"10.43.0.10"}, Searches: []string{"shop.svc.cluster.local"}, Options: []string{"ndots:5"}}
	cfg, err := SandboxConfig(pod, testNode(), Sandbox{Attempt: 2, DNS: dns, CgroupParent: "/kubepods/besteffort/pod1234-abcd",
		LogDirectory: PodLogDirectory("/var/log/pods", pod)})
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Metadata; m.Name != "web-0" || m.Namespace != "shop" || m.Uid != "1234-abcd" || m.Attempt != 2 {
		t.Errorf("metadata %v", m)
	}
	if cfg.Hostname != "web-0" || cfg.LogDirectory != "/var/log/pods/shop_web-0_1234-abcd" || cfg.DnsConfig != dns {
		t.Errorf("hostname %q log dir %q dns %v", cfg.Hostname, cfg.LogDirectory, cfg.DnsConfig)
	}
	wantLabels := map[string]string{"app": "web", "io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.uid": "1234-abcd"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) || !reflect.DeepEqual(cfg.Annotations, map[string]string{"note": "hi"}) {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	wantPorts := []string{"TCP:8080:80:", "UDP:53:53:fd00::1", "SCTP:9000:0:", "TCP:9090:0:"}
	var gotPorts []string
	for _, p := range cfg.PortMappings {
		gotPorts = append(gotPorts, strings.Join([]string{p.Protocol.String(), strconv.Itoa(int(p.ContainerPort)), strconv.Itoa(int(p.HostPort)), p.HostIp}, ":"))
	}
	if !reflect.DeepEqual(gotPorts, wantPorts) {
		t.Errorf("ports %v, want %v", gotPorts, wantPorts)
	}
	l := cfg.Linux
	if l.CgroupParent != "/kubepods/besteffort/pod1234-abcd" || !reflect.DeepEqual(l.Sysctls, map[string]string{"net.core.somaxconn": "1024"}) {
		t.Errorf("cgroup %q sysctls %v", l.CgroupParent, l.Sysctls)
	}
	sc := l.SecurityContext
	if !sc.Privileged || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault ||
		sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 3000 || !reflect.DeepEqual(sc.SupplementalGroups, []int64{2000, 4000}) {
		t.Errorf("security context %v", sc)
	}
	if sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_POD || l.Resources == nil || l.Overhead == nil {
		t.Errorf("namespaces %v resources %v overhead %v", sc.NamespaceOptions, l.Resources, l.Overhead)
	}
}

func TestSandboxHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b-c"
	for _, tc := range []struct {
		name          string
		spec          corev1.PodSpec
		podName       string
		want, wantErr string
	}{
		{name: "pod name", want: "web-0"},
		{name: "spec.hostname", spec: corev1.PodSpec{Hostname: "db"}, want: "db"},
		{name: "subdomain without FQDN", spec: corev1.PodSpec{Hostname: "db", Subdomain: "cluster"}, want: "db"},
		{name: "FQDN", spec: corev1.PodSpec{Hostname: "db", Subdomain: "cluster", SetHostnameAsFQDN: ptrTo(true)}, want: "db.cluster.shop.svc.cluster.local"},
		{name: "FQDN without subdomain", spec: corev1.PodSpec{SetHostnameAsFQDN: ptrTo(true)}, want: "web-0"},
		{name: "FQDN too long", spec: corev1.PodSpec{Hostname: strings.Repeat("h", 40), Subdomain: "cluster", SetHostnameAsFQDN: ptrTo(true)}, wantErr: "too long"},
		{name: "host network sends none", spec: corev1.PodSpec{HostNetwork: true, Hostname: "db"}, want: ""},
		{name: "long pod name cut at 63 without trailing dash", podName: long, want: strings.Repeat("a", 62)},
		{name: "hostnameOverride", spec: corev1.PodSpec{HostnameOverride: ptrTo("my.host"), Hostname: "db", Subdomain: "x", SetHostnameAsFQDN: ptrTo(true)}, want: "my.host"},
		{name: "invalid hostname", spec: corev1.PodSpec{Hostname: "Not_Valid"}, wantErr: "not a valid DNS label"},
	} {
		pod := testPod()
		if tc.podName != "" {
			pod.Name = tc.podName
		}
		tc.spec.Containers = pod.Spec.Containers
		tc.spec.EnableServiceLinks = pod.Spec.EnableServiceLinks
		pod.Spec = tc.spec
		cfg, err := SandboxConfig(pod, testNode(), Sandbox{})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || cfg.Hostname != tc.want {
			t.Errorf("%s: hostname %q, %v; want %q", tc.name, cfg.GetHostname(), err, tc.want)
		}
		if tc.spec.HostNetwork && cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
			t.Errorf("%s: network namespace %v", tc.name, cfg.Linux.SecurityContext.NamespaceOptions)
		}
	}
}
