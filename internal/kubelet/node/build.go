package node

import (
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"orch/internal/quota"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// MaxPods is the pods capacity of a node, upstream's default --max-pods.
const MaxPods = 110

// LeaseDurationSeconds is the Lease's leaseDurationSeconds, upstream's
// default --node-lease-duration-seconds.
const LeaseDurationSeconds = 40

// System is what the machine and its runtime report: the facts a Node's
// capacity and nodeInfo are made of.
type System struct {
	CPUs           int
	MemoryBytes    int64 // MemTotal of /proc/meminfo
	StorageBytes   int64 // size of the file system of the data dir
	KernelVersion  string
	OSImage        string
	MachineID      string
	BootID         string
	Arch           string // GOARCH
	RuntimeVersion string // e.g. containerd://1.6.20~ds1
	KubeletVersion string // the Kubernetes version orch serves
	// NotReady says why the node cannot run pods (the runtime or its
	// network is not ready), in upstream's words; empty when it can.
	NotReady []string
	// Pressure says which pressure conditions are True.
	Pressure Pressure
	// Images are the runtime's images as status.images reports them.
	Images []corev1.ContainerImage
}

// BuildNode is the Node this agent registers: labels, taints and status
// (with conditions as of now, none of them having a history).
func BuildNode(cfg Config, sys System, now time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.Name, Labels: Labels(cfg, sys)},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(cfg.Taints)},
		Status:     Status(cfg, sys, nil, now),
	}
}

// Labels are the node's well-known labels plus --node-label (which may
// not override them).
func Labels(cfg Config, sys System) map[string]string {
	labels := maps.Clone(cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, map[string]string{
		corev1.LabelHostname:      hostname(cfg),
		corev1.LabelOSStable:      "linux",
		corev1.LabelArchStable:    sys.Arch,
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": sys.Arch,
	})
	return labels
}

func hostname(cfg Config) string {
	if cfg.Hostname != "" {
		return cfg.Hostname
	}
	return cfg.Name
}

// Status is the node status to post at now; prev are the conditions the
// Node has, whose lastTransitionTime is kept where the status is unchanged.
func Status(cfg Config, sys System, prev []corev1.NodeCondition, now time.Time) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(sys.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(sys.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(sys.StorageBytes, resource.BinarySI),
	}
	var addrs []corev1.NodeAddress
	for _, ip := range cfg.NodeIPs {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: hostname(cfg)})
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(), // nothing is reserved for the system yet
		Conditions:  Conditions(prev, now, sys.NotReady, sys.Pressure),
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(cfg.KubeletPort)},
		},
		Addresses: addrs,
		Images:    sys.Images,
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               sys.MachineID,
			BootID:                  sys.BootID,
			KernelVersion:           sys.KernelVersion,
			OSImage:                 sys.OSImage,
			ContainerRuntimeVersion: sys.RuntimeVersion,
			KubeletVersion:          sys.KubeletVersion,
			OperatingSystem:         "linux",
			Architecture:            sys.Arch,
		},
	}
}

// KeepExtendedResources adds to desired's capacity and allocatable the
// extended resources current advertises that the agent does not manage
// (patched in by an operator or a device plugin's manager), as upstream's
// kubelet keeps them: allocatable is the capacity, nothing reserved.
func KeepExtendedResources(current corev1.NodeStatus, desired *corev1.NodeStatus) {
	for name, q := range current.Capacity {
		if _, managed := desired.Capacity[name]; managed || !quota.IsExtendedResourceName(string(name)) {
			continue
		}
		if desired.Capacity == nil {
			desired.Capacity = corev1.ResourceList{}
		}
		if desired.Allocatable == nil {
			desired.Allocatable = corev1.ResourceList{}
		}
		desired.Capacity[name] = q.DeepCopy()
		desired.Allocatable[name] = q.DeepCopy()
	}
}

// Conditions are the node's conditions at now, with upstream's reasons.
// Ready is True unless notReady says why not; MemoryPressure,
// DiskPressure and PIDPressure are True where pressure says. A condition
// keeps its lastTransitionTime from prev when its status did not change.
func Conditions(prev []corev1.NodeCondition, now time.Time, notReady []string, pressure Pressure) []corev1.NodeCondition {
	t := metav1.NewTime(now)
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if len(notReady) > 0 {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: strings.Join(notReady, ", ")}
	}
	var desired []corev1.NodeCondition
	for _, pc := range pressureConditions {
		c := corev1.NodeCondition{Type: pc.typ, Status: corev1.ConditionFalse, Reason: pc.no[0], Message: pc.no[1]}
		if pressure[pc.typ] {
			c = corev1.NodeCondition{Type: pc.typ, Status: corev1.ConditionTrue, Reason: pc.yes[0], Message: pc.yes[1]}
		}
		desired = append(desired, c)
	}
	desired = append(desired, ready)
	for i := range desired {
		c := &desired[i]
		c.LastHeartbeatTime, c.LastTransitionTime = t, t
		for _, p := range prev {
			if p.Type == c.Type && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return desired
}

// pressureConditions are upstream's reasons and messages of the pressure
// conditions when True (yes) and False (no).
var pressureConditions = []struct {
	typ     corev1.NodeConditionType
	yes, no [2]string
}{
	{corev1.NodeMemoryPressure, [2]string{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
		[2]string{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"}},
	{corev1.NodeDiskPressure, [2]string{"KubeletHasDiskPressure", "kubelet has disk pressure"},
		[2]string{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"}},
	{corev1.NodePIDPressure, [2]string{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
		[2]string{"KubeletHasSufficientPID", "kubelet has sufficient PID available"}},
}

// StatusChanged reports whether desired says something current does not,
// heartbeat and transition times aside: then the status is posted at once
// rather than at the next status interval.
func StatusChanged(current, desired corev1.NodeStatus) bool {
	if !equality.Semantic.DeepEqual(current.Capacity, desired.Capacity) ||
		!equality.Semantic.DeepEqual(current.Allocatable, desired.Allocatable) ||
		!equality.Semantic.DeepEqual(current.Addresses, desired.Addresses) ||
		current.DaemonEndpoints != desired.DaemonEndpoints ||
		current.NodeInfo != desired.NodeInfo ||
		!equality.Semantic.DeepEqual(current.Images, desired.Images) {
		return true
	}
	strip := func(cs []corev1.NodeCondition) []corev1.NodeCondition {
		out := make([]corev1.NodeCondition, len(cs))
		for i, c := range cs {
			out[i] = corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		}
		slices.SortFunc(out, func(a, b corev1.NodeCondition) int {
			if a.Type < b.Type {
				return -1
			}
			if a.Type > b.Type {
				return 1
			}
			return 0
		})
		return out
	}
	return !slices.Equal(strip(current.Conditions), strip(desired.Conditions))
}

// MergeLabels returns existing with the labels of desired set, and whether
// that changed anything: on a node that was registered before, the agent
// updates its labels (as k3s does); other labels, taints and spec stay.
func MergeLabels(existing, desired *corev1.Node) (*corev1.Node, bool) {
	out := existing.DeepCopy()
	changed := false
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		if cur, ok := out.Labels[k]; !ok || cur != v {
			out.Labels[k] = v
			changed = true
		}
	}
	return out, changed
}

// Lease is the node's Lease in kube-node-lease renewed at now, owned by the
// Node (uid) as upstream's kubelet owns it. existing, when not nil, is the
// Lease to renew.
func Lease(existing *coordinationv1.Lease, nodeName string, uid types.UID, now time.Time) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: corev1.NamespaceNodeLease}}
	if existing != nil {
		lease = existing.DeepCopy()
	}
	lease.Spec.HolderIdentity = ptr.To(nodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](LeaseDurationSeconds)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if uid != "" && len(lease.OwnerReferences) == 0 {
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: uid}}
	}
	return lease
}

// ipStrings is for logs.
func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}
