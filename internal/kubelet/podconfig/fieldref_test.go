package podconfig

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFieldRefValue(t *testing.T) {
	pod := testPod()
	pod.Labels = map[string]string{"app": "web", "tier": "front\"end"}
	pod.Annotations = map[string]string{"example.com/Owner": "ann"}
	for _, tc := range []struct {
		path, want, wantErr string
		hostIPs, podIPs     []string
	}{
		{path: "metadata.name", want: "web-0"},
		{path: "metadata.namespace", want: "shop"},
		{path: "metadata.uid", want: "1234-abcd"},
		{path: "metadata.labels['app']", want: "web"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.labels", want: "app=\"web\"\ntier=\"front\\\"end\""},
		{path: "metadata.annotations['example.com/Owner']", want: "ann"},
		{path: "metadata.annotations", want: "example.com/Owner=\"ann\""},
		{path: "metadata.labels['bad key!']", wantErr: "invalid key subscript"},
		{path: "metadata.name['x']", wantErr: "does not support subscript"},
		{path: "spec.nodeName", want: "node-1"},
		{path: "spec.host", want: "node-1"},
		{path: "spec.serviceAccountName", want: "builder"},
		{path: "status.hostIP", hostIPs: []string{"10.0.0.5", "fd00::5"}, want: "10.0.0.5"},
		{path: "status.hostIPs", hostIPs: []string{"10.0.0.5", "fd00::5"}, want: "10.0.0.5,fd00::5"},
		{path: "status.hostIP", wantErr: "no IP"},
		{path: "status.podIP", podIPs: []string{"10.42.0.7", "fd00:42::7"}, want: "10.42.0.7"},
		{path: "status.podIPs", podIPs: []string{"10.42.0.7", "fd00:42::7"}, want: "10.42.0.7,fd00:42::7"},
		{path: "status.podIP", want: ""},
		{path: "status.phase", wantErr: "unsupported fieldPath"},
		{path: "spec.restartPolicy", wantErr: "unsupported fieldPath"},
	} {
		got, err := FieldRefValue(pod, &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: tc.path}, tc.hostIPs, tc.podIPs)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.path, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if _, err := FieldRefValue(pod, &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}, nil, nil); err == nil {
		t.Error("apiVersion v2 accepted")
	}
}

func TestResourceFieldRefValue(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Resources = req(
		resources("cpu", "250m", "memory", "100Mi", "ephemeral-storage", "1Gi", "hugepages-2Mi", "4Mi"),
		resources("cpu", "1500m", "memory", "129M", "hugepages-2Mi", "4Mi"))
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "other", Resources: req(resources("cpu", "1"), nil)})
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: req(nil, nil)}}
	alloc := testNode().Allocatable
	for _, tc := range []struct {
		res, divisor, container string
		podLimits               corev1.ResourceList
		want, wantErr           string
	}{
		{res: "requests.cpu", want: "1"}, // 250m rounds up to 1 CPU
		{res: "requests.cpu", divisor: "1m", want: "250"},
		{res: "requests.cpu", divisor: "100m", want: "3"},
		{res: "limits.cpu", want: "2"},
		{res: "limits.cpu", divisor: "1m", want: "1500"},
		{res: "requests.memory", want: "104857600"},
		{res: "requests.memory", divisor: "1Mi", want: "100"},
		{res: "requests.memory", divisor: "1Gi", want: "1"},
		{res: "limits.memory", divisor: "1Mi", want: "124"}, // 129e6 / 2^20 = 123.02 → 124
		{res: "requests.ephemeral-storage", divisor: "1Mi", want: "1024"},
		{res: "limits.ephemeral-storage", divisor: "1Gi", want: "100"}, // node allocatable
		{res: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{res: "requests.hugepages-1Gi", want: "0"},
		{res: "limits.cpu", container: "other", want: "2"}, // allocatable
		{res: "limits.memory", container: "other", want: "4294967296"},
		{res: "limits.cpu", container: "init", want: "0"}, // init containers are not defaulted
		{res: "limits.cpu", container: "other", podLimits: resources("cpu", "3"), want: "3"},
		{res: "limits.memory", container: "other", podLimits: resources("cpu", "3"), want: "4294967296"},
		{res: "requests.nvidia.com/gpu", wantErr: "unsupported"},
		{res: "cpu", wantErr: "unsupported"},
		{res: "limits.cpu", container: "nope", wantErr: "not found"},
	} {
		p := pod.DeepCopy()
		if tc.podLimits != nil {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: tc.podLimits}
		}
		ref := &corev1.ResourceFieldSelector{Resource: tc.res, ContainerName: tc.container}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		got, err := ResourceFieldRefValue(p, &p.Spec.Containers[0], ref, alloc)
		name := tc.res + "/" + tc.divisor + "/" + tc.container
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, tc.want)
		}
	}
	if pod.Spec.Containers[1].Resources.Limits != nil {
		t.Error("the pod's container was changed")
	}
}
