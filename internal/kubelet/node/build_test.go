package node

import (
	"net"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func testConfig() Config {
	return Config{
		Name:    "worker-1",
		NodeIPs: []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("fd00::5")},
		Labels:  map[string]string{"disk": "ssd", corev1.LabelHostname: "ignored"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
	}
}

func testSystem() System {
	return System{CPUs: 2, MemoryBytes: 4 << 30, StorageBytes: 100 << 30, KernelVersion: "6.1.0-18-amd64",
		OSImage: "Debian GNU/Linux 12 (bookworm)", MachineID: "m1", BootID: "b1", Arch: "arm64",
		RuntimeVersion: "containerd://1.6.20~ds1", KubeletVersion: "v1.37.2"}
}

func TestBuildNode(t *testing.T) {
	n := BuildNode(testConfig(), testSystem(), t0)
	if n.Name != "worker-1" {
		t.Errorf("name = %q", n.Name)
	}
	wantLabels := map[string]string{"disk": "ssd", "kubernetes.io/hostname": "worker-1", "kubernetes.io/os": "linux",
		"kubernetes.io/arch": "arm64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64"}
	if !reflect.DeepEqual(n.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v (well-known labels win over --node-label)", n.Labels, wantLabels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	for name, want := range map[corev1.ResourceName]string{"cpu": "2", "memory": "4Gi", "pods": "110", "ephemeral-storage": "100Gi"} {
		for which, list := range map[string]corev1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
			got := list[name]
			if got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s %s = %s, want %s", which, name, got.String(), want)
			}
		}
	}
	wantAddrs := []corev1.NodeAddress{{Type: "InternalIP", Address: "10.0.0.5"}, {Type: "InternalIP", Address: "fd00::5"}, {Type: "Hostname", Address: "worker-1"}}
	if !reflect.DeepEqual(n.Status.Addresses, wantAddrs) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, wantAddrs)
	}
	wantInfo := corev1.NodeSystemInfo{MachineID: "m1", BootID: "b1", KernelVersion: "6.1.0-18-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
		ContainerRuntimeVersion: "containerd://1.6.20~ds1", KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "arm64"}
	if n.Status.NodeInfo != wantInfo {
		t.Errorf("nodeInfo = %+v, want %+v", n.Status.NodeInfo, wantInfo)
	}
	if len(n.Status.Conditions) != 4 {
		t.Errorf("conditions = %v", n.Status.Conditions)
	}

	cfg := testConfig()
	cfg.Hostname = "worker-1.example.com"
	n = BuildNode(cfg, testSystem(), t0)
	if n.Labels[corev1.LabelHostname] != "worker-1.example.com" || n.Status.Addresses[2].Address != "worker-1.example.com" {
		t.Errorf("with a Hostname: label %q, addresses %v", n.Labels[corev1.LabelHostname], n.Status.Addresses)
	}
}

func TestConditions(t *testing.T) {
	want := map[corev1.NodeConditionType][3]string{
		corev1.NodeReady:          {"True", "KubeletReady", "kubelet is posting ready status"},
		corev1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		corev1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		corev1.NodePIDPressure:    {"False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	}
	for _, tc := range []struct {
		name           string
		prev           []corev1.NodeCondition
		wantTransition map[corev1.NodeConditionType]time.Time
	}{
		{name: "new node", wantTransition: map[corev1.NodeConditionType]time.Time{"Ready": t1, "MemoryPressure": t1, "DiskPressure": t1, "PIDPressure": t1}},
		{name: "unchanged keeps transition times", prev: Conditions(nil, t0, nil, nil),
			wantTransition: map[corev1.NodeConditionType]time.Time{"Ready": t0, "MemoryPressure": t0, "DiskPressure": t0, "PIDPressure": t0}},
		{name: "the node lifecycle controller set Ready Unknown", prev: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: metav1.NewTime(t0)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)},
		}, wantTransition: map[corev1.NodeConditionType]time.Time{"Ready": t1, "MemoryPressure": t0, "DiskPressure": t1, "PIDPressure": t1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(tc.prev, t1, nil, nil)
			if len(got) != len(want) {
				t.Fatalf("got %d conditions, want %d", len(got), len(want))
			}
			for _, c := range got {
				w := want[c.Type]
				if string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] {
					t.Errorf("%s = %s/%s/%q, want %v", c.Type, c.Status, c.Reason, c.Message, w)
				}
				if !c.LastHeartbeatTime.Time.Equal(t1) {
					t.Errorf("%s heartbeat = %v, want %v", c.Type, c.LastHeartbeatTime, t1)
				}
				if !c.LastTransitionTime.Time.Equal(tc.wantTransition[c.Type]) {
					t.Errorf("%s transition = %v, want %v", c.Type, c.LastTransitionTime, tc.wantTransition[c.Type])
				}
			}
		})
	}
}

// TestPressureConditions: the pressure conditions say True with upstream's
// reasons where there is pressure; lastTransitionTime moves only when the
// status does.
func TestPressureConditions(t *testing.T) {
	t2 := t1.Add(time.Minute)
	want := map[corev1.NodeConditionType][3]string{
		corev1.NodeMemoryPressure: {"True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
		corev1.NodeDiskPressure:   {"True", "KubeletHasDiskPressure", "kubelet has disk pressure"},
		corev1.NodePIDPressure:    {"True", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
		corev1.NodeReady:          {"True", "KubeletReady", "kubelet is posting ready status"},
	}
	all := Pressure{corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true, corev1.NodePIDPressure: true}
	for _, c := range Conditions(nil, t0, nil, all) {
		if w := want[c.Type]; string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] {
			t.Errorf("%s = %s/%s/%q, want %v", c.Type, c.Status, c.Reason, c.Message, w)
		}
	}

	memory := Pressure{corev1.NodeMemoryPressure: true}
	transitions := func(cs []corev1.NodeCondition) map[corev1.NodeConditionType]time.Time {
		out := map[corev1.NodeConditionType]time.Time{}
		for _, c := range cs {
			out[c.Type] = c.LastTransitionTime.Time
		}
		return out
	}
	calm := Conditions(nil, t0, nil, nil)
	pressed := Conditions(calm, t1, nil, memory)
	if got := transitions(pressed); !got[corev1.NodeMemoryPressure].Equal(t1) || !got[corev1.NodeDiskPressure].Equal(t0) {
		t.Errorf("under memory pressure at t1, transitions = %v; want MemoryPressure at t1, the others at t0", got)
	}
	still := Conditions(pressed, t2, nil, memory)
	if got := transitions(still); !got[corev1.NodeMemoryPressure].Equal(t1) {
		t.Errorf("still under pressure at t2, MemoryPressure transition = %v, want t1", got[corev1.NodeMemoryPressure])
	}
	relieved := Conditions(still, t2, nil, nil)
	for _, c := range relieved {
		if c.Type == corev1.NodeMemoryPressure && (c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t2)) {
			t.Errorf("relieved at t2, MemoryPressure = %s since %v, want False since t2", c.Status, c.LastTransitionTime)
		}
	}
	if !StatusChanged(corev1.NodeStatus{Conditions: calm}, corev1.NodeStatus{Conditions: pressed}) {
		t.Error("StatusChanged says nothing changed when MemoryPressure turned True")
	}
}

func TestStatusChanged(t *testing.T) {
	cfg, sys := testConfig(), testSystem()
	base := Status(cfg, sys, nil, t0)
	for _, tc := range []struct {
		name   string
		change func(s *corev1.NodeStatus)
		want   bool
	}{
		{"identical", func(s *corev1.NodeStatus) {}, false},
		{"only heartbeats differ", func(s *corev1.NodeStatus) { *s = Status(cfg, sys, s.Conditions, t1) }, false},
		{"conditions in another order", func(s *corev1.NodeStatus) {
			s.Conditions[0], s.Conditions[3] = s.Conditions[3], s.Conditions[0]
		}, false},
		{"Ready set Unknown by a controller", func(s *corev1.NodeStatus) { s.Conditions[3].Status = corev1.ConditionUnknown }, true},
		{"a condition missing", func(s *corev1.NodeStatus) { s.Conditions = s.Conditions[:3] }, true},
		{"runtime upgraded", func(s *corev1.NodeStatus) { s.NodeInfo.ContainerRuntimeVersion = "containerd://1.7.0" }, true},
		{"address changed", func(s *corev1.NodeStatus) { s.Addresses[0].Address = "10.0.0.6" }, true},
		{"capacity changed", func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceCPU] = resource.MustParse("4") }, true},
		{"same quantity, other form", func(s *corev1.NodeStatus) { s.Capacity[corev1.ResourceMemory] = resource.MustParse("4096Mi") }, false},
		{"an image pulled", func(s *corev1.NodeStatus) {
			s.Images = append(s.Images, corev1.ContainerImage{Names: []string{"busybox:1"}, SizeBytes: 1})
		}, true},
		{"no images, listed empty", func(s *corev1.NodeStatus) { s.Images = []corev1.ContainerImage{} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current := *base.DeepCopy()
			tc.change(&current)
			if got := StatusChanged(current, base); got != tc.want {
				t.Errorf("StatusChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMergeLabels(t *testing.T) {
	desired := BuildNode(testConfig(), testSystem(), t0)
	existing := desired.DeepCopy()
	existing.Labels["other"] = "kept"
	existing.Spec.Taints = nil
	if _, changed := MergeLabels(existing, desired); changed {
		t.Error("nothing to change, but MergeLabels changed something")
	}
	existing.Labels["disk"] = "hdd"
	delete(existing.Labels, "kubernetes.io/arch")
	merged, changed := MergeLabels(existing, desired)
	if !changed || merged.Labels["disk"] != "ssd" || merged.Labels["kubernetes.io/arch"] != "arm64" || merged.Labels["other"] != "kept" {
		t.Errorf("merged labels = %v (changed %v)", merged.Labels, changed)
	}
	if len(merged.Spec.Taints) != 0 {
		t.Errorf("taints are set at registration only, got %v", merged.Spec.Taints)
	}
	if existing.Labels["disk"] != "hdd" {
		t.Error("MergeLabels changed its argument")
	}
}

func TestLease(t *testing.T) {
	l := Lease(nil, "worker-1", "uid-1", t0)
	if l.Name != "worker-1" || l.Namespace != "kube-node-lease" || *l.Spec.HolderIdentity != "worker-1" ||
		*l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(t0) {
		t.Errorf("new lease = %+v", l)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "worker-1", UID: "uid-1"}}
	if !reflect.DeepEqual(l.OwnerReferences, want) {
		t.Errorf("owner references = %v, want %v", l.OwnerReferences, want)
	}
	l.ResourceVersion = "7"
	l.Spec.HolderIdentity = nil
	renewed := Lease(l, "worker-1", "uid-1", t1)
	if renewed.ResourceVersion != "7" || *renewed.Spec.HolderIdentity != "worker-1" || !renewed.Spec.RenewTime.Time.Equal(t1) || len(renewed.OwnerReferences) != 1 {
		t.Errorf("renewed lease = %+v", renewed)
	}
	if !l.Spec.RenewTime.Time.Equal(t0) {
		t.Error("Lease changed the lease it renewed")
	}
	if noOwner := Lease(nil, "worker-1", "", t0); len(noOwner.OwnerReferences) != 0 {
		t.Errorf("no UID, yet owner references %v", noOwner.OwnerReferences)
	}
}

func TestMemTotalAndPrettyName(t *testing.T) {
	got, err := memTotal([]byte("MemFree:  100 kB\nMemTotal:       16318128 kB\n"))
	if err != nil || got != 16318128*1024 {
		t.Errorf("memTotal = %d, %v", got, err)
	}
	if _, err := memTotal([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal, no error")
	}
	for in, want := range map[string]string{
		"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n": "Debian GNU/Linux 12 (bookworm)",
		"PRETTY_NAME='Alpine Linux v3.20'\n":                                          "Alpine Linux v3.20",
		"PRETTY_NAME=Plain\n":                                                         "Plain",
		"NAME=x\n":                                                                    "",
	} {
		if got := prettyName([]byte(in)); got != want {
			t.Errorf("prettyName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadSystem(t *testing.T) {
	sys, err := ReadSystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if sys.CPUs < 1 || sys.MemoryBytes <= 0 || sys.StorageBytes <= 0 || sys.KernelVersion == "" || sys.OSImage == "" || sys.KubeletVersion == "" {
		t.Errorf("ReadSystem = %+v", sys)
	}
}

// The agent's own resources replace the Node's; extended resources others
// advertised stay, allocatable equal to capacity; native ones it does not
// report (hugepages) are dropped.
func TestKeepExtendedResources(t *testing.T) {
	current := corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "example.com/gpu": resource.MustParse("2"),
			"hugepages-2Mi": resource.MustParse("1Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "example.com/gpu": resource.MustParse("1")},
	}
	desired := corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}
	KeepExtendedResources(current, &desired)
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), "example.com/gpu": resource.MustParse("2")}
	if !equality.Semantic.DeepEqual(desired.Capacity, want) || !equality.Semantic.DeepEqual(desired.Allocatable, want) {
		t.Errorf("capacity %v, allocatable %v; want both %v", desired.Capacity, desired.Allocatable, want)
	}
}
