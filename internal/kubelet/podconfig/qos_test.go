package podconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestQOSClass(t *testing.T) {
	guaranteed := req(resources("cpu", "1", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi"))
	for _, tc := range []struct {
		name     string
		init     []corev1.ResourceRequirements
		main     []corev1.ResourceRequirements
		podLevel *corev1.ResourceRequirements
		status   corev1.PodQOSClass
		want     corev1.PodQOSClass
	}{
		{name: "nothing", main: []corev1.ResourceRequirements{{}}, want: corev1.PodQOSBestEffort},
		{name: "no containers", want: corev1.PodQOSBestEffort},
		{name: "only ephemeral-storage", main: []corev1.ResourceRequirements{req(resources("ephemeral-storage", "1Gi"), nil)}, want: corev1.PodQOSBestEffort},
		{name: "equal requests and limits", main: []corev1.ResourceRequirements{guaranteed, guaranteed}, want: corev1.PodQOSGuaranteed},
		{name: "1000m equals 1", main: []corev1.ResourceRequirements{req(resources("cpu", "1000m", "memory", "1Gi"), resources("cpu", "1", "memory", "1024Mi"))}, want: corev1.PodQOSGuaranteed},
		{name: "limits only (not defaulted)", main: []corev1.ResourceRequirements{req(nil, resources("cpu", "1", "memory", "1Gi"))}, want: corev1.PodQOSBurstable},
		{name: "cpu only", main: []corev1.ResourceRequirements{req(resources("cpu", "1"), resources("cpu", "1"))}, want: corev1.PodQOSBurstable},
		{name: "requests below limits", main: []corev1.ResourceRequirements{req(resources("cpu", "1", "memory", "1Gi"), resources("cpu", "2", "memory", "1Gi"))}, want: corev1.PodQOSBurstable},
		{name: "guaranteed and best effort", main: []corev1.ResourceRequirements{guaranteed, {}}, want: corev1.PodQOSBurstable},
		{name: "init container counts", init: []corev1.ResourceRequirements{{}}, main: []corev1.ResourceRequirements{guaranteed}, want: corev1.PodQOSBurstable},
		{name: "status wins", main: []corev1.ResourceRequirements{{}}, status: corev1.PodQOSGuaranteed, want: corev1.PodQOSGuaranteed},
		{name: "pod-level resources win", main: []corev1.ResourceRequirements{{}}, podLevel: &guaranteed, want: corev1.PodQOSGuaranteed},
		{name: "pod-level without cpu or memory ignored", main: []corev1.ResourceRequirements{guaranteed},
			podLevel: &corev1.ResourceRequirements{Requests: resources("ephemeral-storage", "1Gi")}, want: corev1.PodQOSGuaranteed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			for _, r := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Resources: r})
			}
			for _, r := range tc.main {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Resources: r})
			}
			pod.Spec.Resources = tc.podLevel
			pod.Status.QOSClass = tc.status
			if got := QOSClass(pod); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30
	always := corev1.ContainerRestartPolicyAlways
	burst := func(mem string) corev1.ResourceRequirements {
		return req(resources("memory", mem), resources("memory", "20Gi"))
	}
	for _, tc := range []struct {
		name string
		pod  func(p *corev1.Pod)
		want int64
	}{
		{name: "best effort", pod: func(p *corev1.Pod) {}, want: 1000},
		{name: "guaranteed", pod: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = req(resources("cpu", "1", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi"))
		}, want: -997},
		{name: "burstable 10%", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = burst("1Gi") }, want: 900},
		{name: "burstable no memory request", pod: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = req(resources("cpu", "100m"), nil)
		}, want: 999}, // 1000 would tie with BestEffort
		{name: "burstable tiny request", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = burst("1Ki") }, want: 999},
		{name: "burstable asks for all memory", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = burst("10Gi") }, want: 3},
		{name: "burstable asks for more than there is", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = burst("15Gi") }, want: 3},
		{name: "burstable 99.9%", pod: func(p *corev1.Pod) { p.Spec.Containers[0].Resources = burst("10220Mi") }, want: 3},
		{name: "node critical best effort", pod: func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "system-node-critical"
			p.Spec.Priority = ptrTo(int32(2000001000))
		}, want: -997},
		{name: "static pod in system-node-critical", pod: func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "system-node-critical"
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		}, want: -997},
		{name: "system-node-critical class without priority is not critical", pod: func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "system-node-critical"
		}, want: 1000},
		{name: "pod-level request shared", pod: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: resources("memory", "3Gi")}
			p.Spec.Containers[0].Resources = burst("1Gi")
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Resources: burst("1Gi")})
		}, want: 1000 - 1000*(1<<30+(1<<30)/2)/capacity}, // (3Gi-2Gi)/2 each
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod()
			tc.pod(p)
			if got := OOMScoreAdj(p, &p.Spec.Containers[0], capacity); got != tc.want {
				t.Errorf("OOMScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("sidecar no higher than smallest regular container", func(t *testing.T) {
		p := testPod()
		p.Spec.Containers[0].Resources = burst("2Gi") // 1000-204 = 796
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Resources: burst("1Gi")}}
		if got := OOMScoreAdj(p, &p.Spec.InitContainers[0], capacity); got != 800 {
			t.Errorf("sidecar OOMScoreAdj = %d, want 800 (that of the 2Gi container)", got)
		}
	})
}

func TestPodCgroupName(t *testing.T) {
	pod := &corev1.Pod{}
	pod.UID = "1234-abcd"
	for _, tc := range []struct {
		qos     corev1.PodQOSClass
		systemd bool
		want    string
	}{
		{corev1.PodQOSGuaranteed, false, "/kubepods/pod1234-abcd"},
		{corev1.PodQOSBurstable, false, "/kubepods/burstable/pod1234-abcd"},
		{corev1.PodQOSBestEffort, false, "/kubepods/besteffort/pod1234-abcd"},
		{corev1.PodQOSGuaranteed, true, "kubepods-pod1234_abcd.slice"},
		{corev1.PodQOSBurstable, true, "kubepods-burstable-pod1234_abcd.slice"},
		{corev1.PodQOSBestEffort, true, "kubepods-besteffort-pod1234_abcd.slice"},
	} {
		if got := PodCgroupName(pod, tc.qos, tc.systemd); got != tc.want {
			t.Errorf("PodCgroupName(%s, systemd=%v) = %q, want %q", tc.qos, tc.systemd, got, tc.want)
		}
	}
}
