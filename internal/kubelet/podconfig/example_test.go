package podconfig_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/kubelet/podconfig"
)

// noObjects is an EnvSource with no ConfigMaps, Secrets or Services.
type noObjects struct{}

func (noObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	return nil, podconfig.ErrNotFound
}
func (noObjects) Secret(ns, name string) (*corev1.Secret, error) { return nil, podconfig.ErrNotFound }
func (noObjects) Services() ([]*corev1.Service, error)           { return nil, nil }

func Example() {
	links := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello", UID: "u1"},
		Spec: corev1.PodSpec{
			EnableServiceLinks: &links,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox",
				Command: []string{"echo", "$(WHO)"},
				Env:     []corev1.EnvVar{{Name: "WHO", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			}},
		},
	}
	node := podconfig.Node{Name: "n1", HostIPs: []string{"10.0.0.5"}, MemoryCapacity: 4 << 30}
	qos := podconfig.QOSClass(pod)
	sb, _ := podconfig.SandboxConfig(pod, node, podconfig.Sandbox{
		CgroupParent: podconfig.PodCgroupName(pod, qos, false),
		LogDirectory: podconfig.PodLogDirectory("/var/log/pods", pod),
	})
	cc, _ := podconfig.ContainerConfig(pod, &pod.Spec.Containers[0], node,
		podconfig.Container{ImageRef: "sha256:1", PodIPs: []string{"10.42.0.9"}, EtcHostsPath: "/pods/u1/etc-hosts"}, noObjects{})
	fmt.Println(sb.Hostname, sb.LogDirectory, sb.Linux.CgroupParent)
	fmt.Println(cc.Command, cc.LogPath, cc.Linux.Resources.OomScoreAdj, len(cc.Mounts))
	// Output:
	// hello /var/log/pods/default_hello_u1 /kubepods/besteffort/podu1
	// [echo hello] main/0.log 1000 1
}
