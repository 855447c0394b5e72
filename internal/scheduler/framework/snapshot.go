package framework

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is the cluster as the scheduler sees it: nodes with the pods
// bound (or assumed) to them, namespace labels, the pods nominated to nodes
// by preemption, and optional listers some plugins use. It is not safe for
// concurrent use; the caller serialises scheduling cycles and updates.
type Snapshot struct {
	nodes   []*NodeInfo
	byName  map[string]*NodeInfo
	pending map[string]*NodeInfo // pods whose node is not (yet) known
	podNode map[types.UID]string
	// imageNodes counts the nodes that have each (normalized) image name.
	imageNodes map[string]int
	nsLabels   map[string]labels.Set
	nominated  map[string][]*PodInfo
	nominee    map[types.UID]string
	indexes    map[string]*matchIndex

	// Selectors gives the default spreading selector of a pod (from the
	// Services, ReplicaSets, StatefulSets and ReplicationControllers that
	// select it); nil means none.
	Selectors func(pod *v1.Pod) labels.Selector
	// Volumes answers the VolumeBinding plugin; nil means no volume objects.
	Volumes VolumeLister
}

// VolumeLister gives the volume objects the VolumeBinding plugin reads.
type VolumeLister interface {
	PVC(namespace, name string) (*v1.PersistentVolumeClaim, bool)
	PV(name string) (*v1.PersistentVolume, bool)
	StorageClass(name string) (*storagev1.StorageClass, bool)
	PVs() []*v1.PersistentVolume
}

// NewSnapshot builds a snapshot of nodes and the pods bound to them.
func NewSnapshot(nodes []*v1.Node, pods []*v1.Pod) *Snapshot {
	s := &Snapshot{byName: map[string]*NodeInfo{}, pending: map[string]*NodeInfo{}, podNode: map[types.UID]string{},
		imageNodes: map[string]int{}, nsLabels: map[string]labels.Set{},
		nominated: map[string][]*PodInfo{}, nominee: map[types.UID]string{}, indexes: map[string]*matchIndex{}}
	for _, n := range nodes {
		s.SetNode(n)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			s.AddPod(p)
		}
	}
	return s
}

// Nodes lists the known nodes.
func (s *Snapshot) Nodes() []*NodeInfo { return s.nodes }

// Get returns a node by name.
func (s *Snapshot) Get(name string) *NodeInfo { return s.byName[name] }

// ImageNodes tells on how many nodes an image (normalized name) is.
func (s *Snapshot) ImageNodes(image string) int { return s.imageNodes[image] }

// SetNode adds a node or replaces its object.
func (s *Snapshot) SetNode(node *v1.Node) {
	if n, ok := s.byName[node.Name]; ok {
		s.countImages(n, -1)
		n.SetNode(node)
		s.countImages(n, 1)
		return
	}
	n := s.pending[node.Name]
	delete(s.pending, node.Name)
	if n == nil {
		n = NewNodeInfo(nil)
	} else {
		clear(s.indexes)
	}
	n.SetNode(node)
	s.countImages(n, 1)
	s.byName[node.Name] = n
	s.nodes = append(s.nodes, n)
}

// RemoveNode forgets a node; its pods wait for it to come back.
func (s *Snapshot) RemoveNode(name string) {
	n, ok := s.byName[name]
	if !ok {
		return
	}
	s.countImages(n, -1)
	clear(s.indexes)
	delete(s.byName, name)
	for i, m := range s.nodes {
		if m == n {
			s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
			break
		}
	}
	if len(n.Pods) > 0 {
		n.SetNode(nil)
		s.pending[name] = n
	}
}

func (s *Snapshot) countImages(n *NodeInfo, sign int) {
	for name := range n.Images {
		s.imageNodes[name] += sign
		if s.imageNodes[name] <= 0 {
			delete(s.imageNodes, name)
		}
	}
}

// AddPod accounts a pod bound to (or assumed on) pod.Spec.NodeName,
// replacing any earlier version of it.
func (s *Snapshot) AddPod(pod *v1.Pod) *PodInfo {
	s.RemovePod(pod.UID)
	pi := NewPodInfo(pod)
	name := pod.Spec.NodeName
	n := s.byName[name]
	if n == nil {
		if n = s.pending[name]; n == nil {
			n = NewNodeInfo(nil)
			s.pending[name] = n
		}
	}
	n.AddPod(pi)
	s.podNode[pod.UID] = name
	if n.Node != nil {
		for _, ix := range s.indexes {
			ix.count(pi.Pod, name, 1)
		}
	}
	return pi
}

// RemovePod takes a pod off its node.
func (s *Snapshot) RemovePod(uid types.UID) {
	name, ok := s.podNode[uid]
	if !ok {
		return
	}
	delete(s.podNode, uid)
	if n := s.byName[name]; n != nil {
		if pi, ok := n.RemovePod(uid); ok {
			for _, ix := range s.indexes {
				ix.count(pi.Pod, name, -1)
			}
		}
	} else if n := s.pending[name]; n != nil {
		n.RemovePod(uid)
		if len(n.Pods) == 0 {
			delete(s.pending, name)
		}
	}
}

// HasPod tells whether a pod is accounted on a node, and which.
func (s *Snapshot) HasPod(uid types.UID) (string, bool) {
	name, ok := s.podNode[uid]
	return name, ok
}

// SetNamespace records the labels of a namespace (for namespaceSelector).
func (s *Snapshot) SetNamespace(name string, l map[string]string) { s.nsLabels[name] = l }

// RemoveNamespace forgets a namespace.
func (s *Snapshot) RemoveNamespace(name string) { delete(s.nsLabels, name) }

// NamespaceLabels returns the labels of a namespace.
func (s *Snapshot) NamespaceLabels(name string) labels.Set { return s.nsLabels[name] }

// Nominate records that pod is expected to run on node once its
// preemption victims are gone; an empty node clears the nomination.
func (s *Snapshot) Nominate(pod *v1.Pod, node string) {
	if old, ok := s.nominee[pod.UID]; ok {
		list := s.nominated[old]
		if i := indexOf(list, pod.UID); i >= 0 {
			s.nominated[old] = removeAt(list, i)
		}
		if len(s.nominated[old]) == 0 {
			delete(s.nominated, old)
		}
		delete(s.nominee, pod.UID)
	}
	if node == "" {
		return
	}
	s.nominee[pod.UID] = node
	s.nominated[node] = append(s.nominated[node], NewPodInfo(pod))
}

// NominatedPods lists the pods nominated to a node.
func (s *Snapshot) NominatedPods(node string) []*PodInfo { return s.nominated[node] }

// matchIndex counts, per node, the live pods of a namespace that a
// selector selects; the snapshot keeps it current as pods come and go.
type matchIndex struct {
	ns      string
	sel     labels.Selector
	perNode map[string]int
}

func (ix *matchIndex) count(p *v1.Pod, node string, delta int) {
	if p.DeletionTimestamp == nil && p.Namespace == ix.ns && ix.sel.Matches(labels.Set(p.Labels)) {
		ix.perNode[node] += delta
	}
}

// CountMatching returns, per node name, how many live (not terminating)
// pods of namespace ns sel selects; an empty selector selects none. The
// counts are indexed, so the pods of one ReplicaSet are counted once, not
// once per scheduling cycle. The caller must not change the map.
func (s *Snapshot) CountMatching(ns string, sel labels.Selector) map[string]int {
	if sel.Empty() {
		return nil
	}
	key := ns + "\x00" + sel.String()
	if ix, ok := s.indexes[key]; ok {
		return ix.perNode
	}
	if len(s.indexes) >= 64 {
		clear(s.indexes)
	}
	ix := &matchIndex{ns: ns, sel: sel, perNode: map[string]int{}}
	for _, n := range s.nodes {
		for _, p := range n.Pods {
			ix.count(p.Pod, n.Name(), 1)
		}
	}
	s.indexes[key] = ix
	return ix.perNode
}
