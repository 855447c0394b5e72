package framework

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeInfo is a node with the pods on it and what they request.
type NodeInfo struct {
	Node *v1.Node
	Pods []*PodInfo
	// PodsWithAffinity and PodsWithRequiredAntiAffinity are the subsets of
	// Pods that have (anti-)affinity terms, for the InterPodAffinity plugin.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	Requested                    Resource
	NonZeroRequested             Resource
	Allocatable                  Resource
	UsedPorts                    HostPorts
	// Images maps each name of each image on the node to its size.
	Images map[string]int64
}

// NewNodeInfo returns the NodeInfo of node (which may be nil for pods
// whose node is not known yet) with pods on it.
func NewNodeInfo(node *v1.Node, pods ...*PodInfo) *NodeInfo {
	n := &NodeInfo{UsedPorts: HostPorts{}}
	n.SetNode(node)
	for _, p := range pods {
		n.AddPod(p)
	}
	return n
}

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// SetNode replaces the node object.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.Node = node
	n.Allocatable = Resource{}
	n.Images = nil
	if node == nil {
		return
	}
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Images = make(map[string]int64, len(node.Status.Images))
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.Images[NormalizedImageName(name)] = img.SizeBytes
		}
	}
}

// AddPod accounts a pod to the node.
func (n *NodeInfo) AddPod(p *PodInfo) {
	n.Pods = append(n.Pods, p)
	if p.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, p)
	}
	if len(p.RequiredAntiAffinity) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, p)
	}
	n.update(p, 1)
}

// RemovePod takes a pod off the node; false if it was not there.
func (n *NodeInfo) RemovePod(uid types.UID) (*PodInfo, bool) {
	i := indexOf(n.Pods, uid)
	if i < 0 {
		return nil, false
	}
	p := n.Pods[i]
	n.Pods = removeAt(n.Pods, i)
	if j := indexOf(n.PodsWithAffinity, uid); j >= 0 {
		n.PodsWithAffinity = removeAt(n.PodsWithAffinity, j)
	}
	if j := indexOf(n.PodsWithRequiredAntiAffinity, uid); j >= 0 {
		n.PodsWithRequiredAntiAffinity = removeAt(n.PodsWithRequiredAntiAffinity, j)
	}
	n.update(p, -1)
	return p, true
}

func (n *NodeInfo) update(p *PodInfo, sign int64) {
	n.Requested.add(&p.Requests, sign)
	n.NonZeroRequested.MilliCPU += sign * p.NonZeroCPU
	n.NonZeroRequested.Memory += sign * p.NonZeroMem
	for _, hp := range HostPortsOf(p.Pod) {
		if sign > 0 {
			n.UsedPorts.Add(hp)
		} else {
			n.UsedPorts.Remove(hp)
		}
	}
}

// Clone copies the node info so that pods can be added and removed
// without touching the original (preemption's dry runs do so).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		Node:                         n.Node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		Requested:                    n.Requested.clone(),
		NonZeroRequested:             n.NonZeroRequested.clone(),
		Allocatable:                  n.Allocatable,
		UsedPorts:                    make(HostPorts, len(n.UsedPorts)),
		Images:                       n.Images,
	}
	for k, v := range n.UsedPorts {
		c.UsedPorts[k] = v
	}
	return c
}

func indexOf(pods []*PodInfo, uid types.UID) int {
	for i, p := range pods {
		if p.Pod.UID == uid {
			return i
		}
	}
	return -1
}

func removeAt(pods []*PodInfo, i int) []*PodInfo {
	last := len(pods) - 1
	pods[i] = pods[last]
	pods[last] = nil
	return pods[:last]
}

// HostPort is a host port a pod asks for.
type HostPort struct {
	IP       string // "0.0.0.0" when unset
	Protocol string // "TCP" when unset
	Port     int32
}

// HostPorts counts the host ports in use on a node.
type HostPorts map[HostPort]int

// Add takes a port.
func (h HostPorts) Add(p HostPort) { h[p]++ }

// Remove gives a port back.
func (h HostPorts) Remove(p HostPort) {
	if h[p] <= 1 {
		delete(h, p)
	} else {
		h[p]--
	}
}

// Conflicts tells whether p clashes with a port in use: the same protocol
// and port on the same IP, or where either side binds all addresses.
func (h HostPorts) Conflicts(p HostPort) bool {
	for used := range h {
		if used.Port == p.Port && used.Protocol == p.Protocol &&
			(used.IP == p.IP || used.IP == allIPs || p.IP == allIPs) {
			return true
		}
	}
	return false
}

const allIPs = "0.0.0.0"

// HostPortsOf lists the host ports of a pod's containers and of its
// restartable (sidecar) init containers.
func HostPortsOf(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := HostPort{IP: p.HostIP, Protocol: string(p.Protocol), Port: p.HostPort}
			if hp.IP == "" {
				hp.IP = allIPs
			}
			if hp.Protocol == "" {
				hp.Protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// NormalizedImageName adds the ":latest" tag a name without tag or digest implies.
func NormalizedImageName(name string) string {
	colon, slash := -1, -1
	for i := range name {
		switch name[i] {
		case ':':
			colon = i
		case '/':
			slash = i
		}
	}
	if colon <= slash {
		name += ":latest"
	}
	return name
}
