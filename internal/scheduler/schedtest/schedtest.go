// Package schedtest builds nodes and pods for the scheduler's tests and
// benchmarks, tersely: Node("n1").CPU("2").Label("zone", "a").Obj().
package schedtest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeBuilder builds a node: 4 cpu, 8Gi memory, 110 pods, 100Gi
// ephemeral-storage, labelled kubernetes.io/hostname, Ready.
type NodeBuilder struct{ n *v1.Node }

// Node starts a node.
func Node(name string) NodeBuilder {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name),
		Labels: map[string]string{v1.LabelHostname: name}}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return NodeBuilder{n}
}

// Obj returns the node.
func (b NodeBuilder) Obj() *v1.Node { return b.n }

// Alloc sets an allocatable (and capacity) quantity.
func (b NodeBuilder) Alloc(name v1.ResourceName, q string) NodeBuilder {
	alloc := b.n.Status.Allocatable.DeepCopy()
	alloc[name] = resource.MustParse(q)
	b.n.Status.Allocatable, b.n.Status.Capacity = alloc, alloc
	return b
}

// CPU sets the allocatable cpu.
func (b NodeBuilder) CPU(q string) NodeBuilder { return b.Alloc(v1.ResourceCPU, q) }

// Memory sets the allocatable memory.
func (b NodeBuilder) Memory(q string) NodeBuilder { return b.Alloc(v1.ResourceMemory, q) }

// Pods sets how many pods fit.
func (b NodeBuilder) Pods(q string) NodeBuilder { return b.Alloc(v1.ResourcePods, q) }

// Label adds a label.
func (b NodeBuilder) Label(k, v string) NodeBuilder { b.n.Labels[k] = v; return b }

// Taint adds a taint.
func (b NodeBuilder) Taint(k, v string, effect v1.TaintEffect) NodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, v1.Taint{Key: k, Value: v, Effect: effect})
	return b
}

// Unschedulable cordons the node.
func (b NodeBuilder) Unschedulable() NodeBuilder { b.n.Spec.Unschedulable = true; return b }

// Image adds an image of the given size in bytes.
func (b NodeBuilder) Image(name string, size int64) NodeBuilder {
	b.n.Status.Images = append(b.n.Status.Images, v1.ContainerImage{Names: []string{name}, SizeBytes: size})
	return b
}

// PodBuilder builds a pod in namespace "default" with one container "c"
// (image busybox) and schedulerName default-scheduler.
type PodBuilder struct{ p *v1.Pod }

// Pod starts a pod; its UID is its name.
func Pod(name string) PodBuilder {
	return PodBuilder{&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{}},
		Spec: v1.PodSpec{SchedulerName: "default-scheduler",
			Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}}
}

// Obj returns the pod.
func (b PodBuilder) Obj() *v1.Pod { return b.p }

// Namespace moves the pod.
func (b PodBuilder) Namespace(ns string) PodBuilder { b.p.Namespace = ns; return b }

// Req sets the requests of the first container (name, quantity pairs).
func (b PodBuilder) Req(kv ...string) PodBuilder {
	b.p.Spec.Containers[0].Resources.Requests = requests(kv)
	return b
}

// Container adds a container with the given requests.
func (b PodBuilder) Container(kv ...string) PodBuilder {
	b.p.Spec.Containers = append(b.p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", len(b.p.Spec.Containers)),
		Image: "busybox", Resources: v1.ResourceRequirements{Requests: requests(kv)}})
	return b
}

// Init adds an init container with the given requests; sidecar makes it
// a restartable (restartPolicy Always) one.
func (b PodBuilder) Init(sidecar bool, kv ...string) PodBuilder {
	c := v1.Container{Name: fmt.Sprintf("init%d", len(b.p.Spec.InitContainers)), Image: "busybox",
		Resources: v1.ResourceRequirements{Requests: requests(kv)}}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, c)
	return b
}

// Overhead sets spec.overhead.
func (b PodBuilder) Overhead(kv ...string) PodBuilder { b.p.Spec.Overhead = requests(kv); return b }

func requests(kv []string) v1.ResourceList {
	rl := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// Label adds a label.
func (b PodBuilder) Label(k, v string) PodBuilder { b.p.Labels[k] = v; return b }

// Node binds the pod.
func (b PodBuilder) Node(name string) PodBuilder { b.p.Spec.NodeName = name; return b }

// Priority sets spec.priority.
func (b PodBuilder) Priority(p int32) PodBuilder { b.p.Spec.Priority = &p; return b }

// Image sets the first container's image.
func (b PodBuilder) Image(name string) PodBuilder { b.p.Spec.Containers[0].Image = name; return b }

// HostPort asks for a host port in the first container.
func (b PodBuilder) HostPort(port int32, proto v1.Protocol, ip string) PodBuilder {
	c := &b.p.Spec.Containers[0]
	c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: ip})
	return b
}

// Toleration adds a toleration.
func (b PodBuilder) Toleration(key string, op v1.TolerationOperator, value string, effect v1.TaintEffect) PodBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return b
}

// NodeSelector adds a nodeSelector entry.
func (b PodBuilder) NodeSelector(k, v string) PodBuilder {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}

// Affinity sets spec.affinity.
func (b PodBuilder) Affinity(a *v1.Affinity) PodBuilder { b.p.Spec.Affinity = a; return b }

// Spread adds a topology spread constraint over pods labelled k=v.
func (b PodBuilder) Spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction, k, v string) PodBuilder {
	b.p.Spec.TopologySpreadConstraints = append(b.p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
	})
	return b
}

// PVC mounts a claim.
func (b PodBuilder) PVC(claim string) PodBuilder {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, v1.Volume{Name: claim,
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return b
}

// Term is a pod (anti-)affinity term selecting pods labelled k=v over key.
func Term(key, k, v string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}
