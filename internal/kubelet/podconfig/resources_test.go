package podconfig

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCPUSharesAndQuota(t *testing.T) {
	for _, tc := range []struct{ milli, shares, quota int64 }{
		{0, 2, 0},
		{1, 2, 1000}, // 1*1024/1000 = 1 → min 2 shares; quota 100 → min 1000
		{2, 2, 1000},
		{10, 10, 1000},
		{100, 102, 10000},
		{250, 256, 25000},
		{1000, 1024, 100000},
		{1500, 1536, 150000},
		{300000, 262144, 30000000},
	} {
		if got := CPUShares(tc.milli); got != tc.shares {
			t.Errorf("CPUShares(%d) = %d, want %d", tc.milli, got, tc.shares)
		}
		if got := CPUQuota(tc.milli, QuotaPeriod); got != tc.quota {
			t.Errorf("CPUQuota(%d) = %d, want %d", tc.milli, got, tc.quota)
		}
	}
}

func TestContainerResources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		res      corev1.ResourceRequirements
		podLevel *corev1.ResourceRequirements
		node     func(*Node)
		want     *runtimeapi.LinuxContainerResources
	}{
		{name: "best effort, cgroup v1", want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000}},
		{name: "requests and limits", res: req(resources("cpu", "250m", "memory", "64Mi"), resources("cpu", "500m", "memory", "128Mi")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 128 << 20, OomScoreAdj: 985}},
		{name: "limit without request shares from limit", res: req(nil, resources("cpu", "2")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuQuota: 200000, CpuPeriod: 100000, OomScoreAdj: 999}},
		{name: "explicit zero request", res: req(resources("cpu", "0"), resources("cpu", "2")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 200000, CpuPeriod: 100000, OomScoreAdj: 999}},
		{name: "pod-level limits fill in", res: req(resources("cpu", "100m"), nil),
			podLevel: &corev1.ResourceRequirements{Limits: resources("cpu", "1", "memory", "1Gi")},
			want:     &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 100000, CpuPeriod: 100000, MemoryLimitInBytes: 1 << 30, OomScoreAdj: 999}},
		{name: "cgroup v2", node: func(n *Node) { n.CgroupV2 = true },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000,
				Unified: map[string]string{"memory.oom.group": "1", "memory.high": "max"}}},
		{name: "cgroup v2 single process OOM kill and swap", node: func(n *Node) { n.CgroupV2, n.SingleProcessOOMKill, n.SwapController = true, true, true },
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000,
				Unified: map[string]string{"memory.swap.max": "0", "memory.high": "max"}}},
		{name: "cgroup v1 swap equals memory limit", node: func(n *Node) { n.SwapController = true }, res: req(nil, resources("memory", "1Gi")),
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 1 << 30, MemorySwapLimitInBytes: 1 << 30, OomScoreAdj: 999}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].Resources = tc.res
			pod.Spec.Resources = tc.podLevel
			node := testNode()
			if tc.node != nil {
				tc.node(&node)
			}
			got := ContainerResources(pod, &pod.Spec.Containers[0], node)
			if !reflect.DeepEqual(got.String(), tc.want.String()) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestSandboxResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod()
	pod.Spec.Containers[0].Resources = req(resources("cpu", "100m"), resources("cpu", "200m", "memory", "100Mi"))
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "b", Resources: req(resources("cpu", "100m"), resources("memory", "100Mi"))})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "side", RestartPolicy: &always, Resources: req(resources("cpu", "50m"), nil)},
		{Name: "big-init", Resources: req(resources("cpu", "1"), resources("cpu", "1"))},
	}
	pod.Spec.Overhead = resources("cpu", "250m", "memory", "120Mi")
	res, overhead := SandboxResources(pod, testNode())
	// requests: max(100+100+50, 1000+50) = 1050m; cpu limits: max(200, 1000) = 1000m; memory 200Mi.
	want := &runtimeapi.LinuxContainerResources{CpuShares: 1075, CpuQuota: 100000, CpuPeriod: 100000, MemoryLimitInBytes: 200 << 20}
	if res.String() != want.String() {
		t.Errorf("resources = %v, want %v", res, want)
	}
	wantOver := &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 25000, CpuPeriod: 100000, MemoryLimitInBytes: 120 << 20}
	if overhead.String() != wantOver.String() {
		t.Errorf("overhead = %v, want %v", overhead, wantOver)
	}
	empty, none := SandboxResources(testPod(), testNode())
	if want := (&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000}); empty.String() != want.String() || none.String() != "" {
		t.Errorf("best-effort pod: resources %v overhead %v", empty, none)
	}
}
