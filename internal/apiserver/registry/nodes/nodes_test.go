package nodes

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefault(t *testing.T) {
	node := &corev1.Node{
		Spec:   corev1.NodeSpec{PodCIDR: "10.42.1.0/24"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}
	Resource().Default(node)
	if !reflect.DeepEqual(node.Spec.PodCIDRs, []string{"10.42.1.0/24"}) {
		t.Errorf("podCIDRs = %v", node.Spec.PodCIDRs)
	}
	if got := node.Status.Allocatable.Cpu().String(); got != "4" {
		t.Errorf("allocatable cpu = %s", got)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.NodeSpec
		want []string
	}{
		{"valid", corev1.NodeSpec{PodCIDRs: []string{"10.42.0.0/24", "fd00::/64"}, Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}}, nil},
		{"bad cidr", corev1.NodeSpec{PodCIDRs: []string{"10.42.0.0/33"}}, []string{"spec.podCIDRs[0]"}},
		{"two v4 cidrs", corev1.NodeSpec{PodCIDRs: []string{"10.42.0.0/24", "10.42.1.0/24"}}, []string{"spec.podCIDRs"}},
		{"taint without effect", corev1.NodeSpec{Taints: []corev1.Taint{{Key: "a"}}}, []string{"spec.taints[0].effect"}},
		{"duplicate taint", corev1.NodeSpec{Taints: []corev1.Taint{{Key: "a", Effect: "NoSchedule"}, {Key: "a", Value: "x", Effect: "NoSchedule"}}}, []string{"spec.taints[1]"}},
		{"bad taint key", corev1.NodeSpec{Taints: []corev1.Taint{{Key: "a b", Effect: "NoExecute"}}}, []string{"spec.taints[0].key"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().Validate(&corev1.Node{Spec: tc.spec}) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	old := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.42.0.0/24"}}}
	changed := &corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: []string{"10.42.9.0/24"}}}
	if errs := Resource().ValidateUpdate(changed, old); len(errs) != 1 {
		t.Errorf("changing podCIDRs: %v", errs)
	}
	if errs := Resource().ValidateUpdate(old, &corev1.Node{}); len(errs) != 0 {
		t.Errorf("setting podCIDRs: %v", errs)
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-26 * time.Hour)),
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/master": "true", "kubernetes.io/role": "edge"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-orch", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20"},
		},
	}
	want := []interface{}{"n1", "Ready,SchedulingDisabled", "control-plane,edge,master", "26h", "v1.37.2-orch",
		"192.168.1.10", "<none>", "Debian GNU/Linux 12 (bookworm)", "<unknown>", "containerd://1.6.20"}
	if got := Resource().Row(node, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v\nwant  %v", got, want)
	}
	if got := Resource().Row(&corev1.Node{}, now)[1]; got != "Unknown" {
		t.Errorf("status without conditions = %v", got)
	}
	if got := Resource().SelectableFields(node)["spec.unschedulable"]; got != "true" {
		t.Errorf("spec.unschedulable = %q", got)
	}
}
