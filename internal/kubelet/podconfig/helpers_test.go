package podconfig

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeSource is an EnvSource over fixed objects; it counts lookups.
type fakeSource struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	services   []*corev1.Service
	err        error // returned by every call when set
	calls      int
}

var _ EnvSource = (*fakeSource)(nil)

func (f *fakeSource) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, ErrNotFound)
}

func (f *fakeSource) Secret(ns, name string) (*corev1.Secret, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, ErrNotFound)
}

func (f *fakeSource) Services() ([]*corev1.Service, error) { return f.services, f.err }

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func req(r, l corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: r, Limits: l}
}

func ptrTo[T any](v T) *T { return &v }

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "1234-abcd",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "hi"}},
		Spec: corev1.PodSpec{
			NodeName:           "node-1",
			ServiceAccountName: "builder",
			EnableServiceLinks: ptrTo(true),
			SecurityContext:    &corev1.PodSecurityContext{},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox:1.36",
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
		},
	}
}

func testNode() Node {
	return Node{
		Name: "node-1", HostIPs: []string{"10.0.0.5", "fd00::5"},
		Allocatable:    resources("cpu", "2", "memory", "4Gi", "ephemeral-storage", "100Gi"),
		MemoryCapacity: 4 << 30, ClusterDomain: "cluster.local",
	}
}
