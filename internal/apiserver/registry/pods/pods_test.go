package pods

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "nginx",
			Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			}},
		}}},
	}
	Resource().Default(pod)
	return pod
}

func TestDefaultAndCreate(t *testing.T) {
	pod := newPod()
	pod.Status.Phase = corev1.PodRunning
	Resource().PrepareForCreate(pod)
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass = %q, want Guaranteed", pod.Status.QOSClass)
	}
	if pod.Spec.EnableServiceLinks == nil || !*pod.Spec.EnableServiceLinks {
		t.Error("enableServiceLinks not defaulted")
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Memory().String(); got != "64Mi" {
		t.Errorf("requests.memory = %s, want 64Mi", got)
	}
	if errs := Resource().Validate(pod); len(errs) != 0 {
		t.Errorf("valid pod rejected: %v", errs)
	}
}

func TestSchedulingGatedCondition(t *testing.T) {
	pod := newPod()
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	Resource().PrepareForCreate(pod)
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Reason != "SchedulingGated" {
		t.Errorf("conditions = %v", pod.Status.Conditions)
	}
}

func TestDefaultPodIPs(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.42.0.5", HostIPs: []corev1.HostIP{{IP: "192.168.1.2"}}}}
	Default(pod)
	if len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != "10.42.0.5" || pod.Status.HostIP != "192.168.1.2" {
		t.Errorf("status = %+v", pod.Status)
	}
}

func TestQOSClass(t *testing.T) {
	cpu := func(req, lim string) corev1.Container {
		c := corev1.Container{}
		if req != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}
		}
		if lim != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(lim)}
		}
		return c
	}
	full := corev1.Container{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}
	cases := []struct {
		name       string
		containers []corev1.Container
		want       corev1.PodQOSClass
	}{
		{"nothing", []corev1.Container{{}}, corev1.PodQOSBestEffort},
		{"request only", []corev1.Container{cpu("100m", "")}, corev1.PodQOSBurstable},
		{"cpu limit only", []corev1.Container{cpu("1", "1")}, corev1.PodQOSBurstable},
		{"full", []corev1.Container{full}, corev1.PodQOSGuaranteed},
		{"full and empty", []corev1.Container{full, {}}, corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		if got := QOSClass(&corev1.PodSpec{Containers: tc.containers}); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string // substring of the error, "" when valid
	}{
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, ""},
		{"labels only", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, ""},
		{"add toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, ""},
		{"remove toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil }, "existing toleration can not be modified"},
		{"env", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}} }, "pod updates may not change fields other than"},
		{"add container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, "may not add or remove containers"},
		{"set deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(30) }, ""},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, "spec.nodeName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod()
			old.Spec.Tolerations = []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}
			pod := old.DeepCopy()
			tc.mutate(pod)
			errs := Resource().ValidateUpdate(pod, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestEphemeralContainers(t *testing.T) {
	debug := func(name, image string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: image}}
	}
	pod := newPod()
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug("a", "busybox")}
	if errs := Resource().ValidateCreate(pod); len(errs) != 1 || errs[0].Error() != "spec.ephemeralContainers: Forbidden: cannot be set on create" {
		t.Errorf("create with an ephemeral container: %v", errs)
	}
	sub := Resource().SpecSubresources["ephemeralcontainers"]

	// Only spec.ephemeralContainers gets through the subresource.
	old := newPod()
	written := old.DeepCopy()
	written.Spec.Containers[0].Image = "other"
	written.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug("a", "busybox")}
	sub.PrepareForUpdate(written, old)
	if written.Spec.Containers[0].Image != old.Spec.Containers[0].Image || len(written.Spec.EphemeralContainers) != 1 {
		t.Errorf("after PrepareForUpdate: image %q, %d ephemeral containers", written.Spec.Containers[0].Image, len(written.Spec.EphemeralContainers))
	}

	old.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug("a", "busybox"), debug("b", "busybox")}
	cases := []struct {
		name string
		list []corev1.EphemeralContainer
		want string // substring of the error, "" when valid
	}{
		{"add one, reordered", []corev1.EphemeralContainer{debug("c", "busybox"), debug("b", "busybox"), debug("a", "busybox")}, ""},
		{"remove", []corev1.EphemeralContainer{debug("a", "busybox")}, `existing ephemeral containers "b" may not be removed`},
		{"change", []corev1.EphemeralContainer{debug("a", "busybox:2"), debug("b", "busybox")}, `existing ephemeral containers "a" may not be changed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := old.DeepCopy()
			pod.Spec.EphemeralContainers = tc.list
			errs := sub.ValidateUpdate(pod, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
	static := old.DeepCopy()
	static.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	if errs := sub.ValidateUpdate(static, static); len(errs) != 1 || !strings.Contains(errs[0].Error(), "static pods do not support ephemeral containers") {
		t.Errorf("static pod: %v", errs)
	}
}

func TestActiveDeadlineUpdates(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	if errs := validateActiveDeadline(ptr(60), ptr(30), nil); len(errs) != 1 {
		t.Errorf("raising the deadline: %v", errs)
	}
	if errs := validateActiveDeadline(nil, ptr(30), nil); len(errs) != 1 {
		t.Errorf("clearing the deadline: %v", errs)
	}
	if errs := validateActiveDeadline(ptr(10), ptr(30), nil); len(errs) != 0 {
		t.Errorf("lowering the deadline: %v", errs)
	}
}

func TestRow(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-10 * time.Minute))
	always := corev1.ContainerRestartPolicyAlways
	yes := true
	cases := []struct {
		name string
		pod  corev1.Pod
		want []interface{}
	}{
		{
			name: "pending unscheduled",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending}},
			want: []interface{}{"p", "0/1", "Pending", "0", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "running with restarts",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.42.0.7"}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, RestartCount: 3,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
							FinishedAt: metav1.NewTime(now.Add(-5 * time.Minute))}}}}}},
			want: []interface{}{"p", "1/1", "Running", "3 (5m ago)", "10m", "10.42.0.7", "n1", "<none>", "<none>"},
		},
		{
			name: "crash loop",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 1,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}},
			want: []interface{}{"p", "0/1", "CrashLoopBackOff", "1", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init progress",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}},
					{Name: "i2", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				}}},
			want: []interface{}{"p", "0/1", "Init:1/2", "0", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init error",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i1"}}, Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
				}}},
			want: []interface{}{"p", "0/1", "Init:ExitCode:2", "0", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "sidecar counts as a container",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always}}, Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions:            []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}},
					InitContainerStatuses: []corev1.ContainerStatus{{Name: "side", Started: &yes, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
					ContainerStatuses:     []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
			want: []interface{}{"p", "2/2", "Running", "0", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}}},
			want: []interface{}{"p", "0/1", "Completed", "0", "10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminating with readiness gates",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created, DeletionTimestamp: &created},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g1"}, {ConditionType: "g2"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, NominatedNodeName: "n2",
					Conditions: []corev1.PodCondition{{Type: "g1", Status: corev1.ConditionTrue}}}},
			want: []interface{}{"p", "0/1", "Terminating", "0", "10m", "<none>", "<none>", "n2", "1/2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Resource().Row(&tc.pod, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("row = %#v\nwant  %#v", got, tc.want)
			}
			if len(got) != len(Resource().Columns) {
				t.Errorf("%d cells for %d columns", len(got), len(Resource().Columns))
			}
		})
	}
}

func TestSelectableFields(t *testing.T) {
	pod := newPod()
	pod.Spec.NodeName = "n1"
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.9"}}
	f := Resource().SelectableFields(pod)
	want := map[string]string{
		"spec.nodeName": "n1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "Running",
		"status.podIP": "10.42.0.9", "status.nominatedNodeName": "",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %q, want %q", k, f[k], v)
		}
	}
	if len(f) != len(want) {
		t.Errorf("fields = %v", f)
	}
}
