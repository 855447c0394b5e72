package scheduler

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	fw "orch/internal/scheduler/framework"
)

// cache is the snapshot the scheduling loop reads, kept up to date by the
// informers, plus the pods the loop assumed on a node before their
// binding shows up in the informer.
type cache struct {
	mu      sync.Mutex
	snap    *fw.Snapshot
	assumed map[types.UID]bool
}

func newCache() *cache {
	return &cache{snap: fw.NewSnapshot(nil, nil), assumed: map[types.UID]bool{}}
}

// assume places the pod on node until the informer confirms or forget
// undoes it. The caller holds mu.
func (c *cache) assume(pod *v1.Pod, node string) *v1.Pod {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	c.snap.AddPod(p)
	c.snap.Nominate(p, "")
	c.assumed[p.UID] = true
	return p
}

func (c *cache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[uid] {
		delete(c.assumed, uid)
		c.snap.RemovePod(uid)
	}
}

// setPod records a pod the informer reports on a node.
func (c *cache) setPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, pod.UID)
	c.snap.Nominate(pod, "")
	c.snap.AddPod(pod)
}

func (c *cache) removePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, uid)
	c.snap.RemovePod(uid)
}

func (c *cache) nominate(pod *v1.Pod, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snap.Nominate(pod, node)
}

func (c *cache) locked(f func(s *fw.Snapshot)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.snap)
}

// selectors answers the default spreading selector of a pod from the
// listers, as upstream's helper.DefaultSelector: the selectors of the
// Services that select the pod, merged with its controller's selector.
type selectors struct {
	services corelisters.ServiceLister
	rcs      corelisters.ReplicationControllerLister
	rss      appslisters.ReplicaSetLister
	sss      appslisters.StatefulSetLister
}

func (s *selectors) of(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	services, _ := s.services.Services(pod.Namespace).List(labels.Everything())
	for _, svc := range services {
		if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			set = labels.Merge(set, svc.Spec.Selector)
		}
	}
	sel := set.AsSelector()
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return sel
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return sel
	}
	var ls *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case v1.SchemeGroupVersion.WithKind("ReplicationController"):
		if rc, err := s.rcs.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
			return labels.Merge(set, rc.Spec.Selector).AsSelector()
		}
	case schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:
		if rs, err := s.rss.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = rs.Spec.Selector
		}
	case schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}:
		if ss, err := s.sss.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = ss.Spec.Selector
		}
	}
	if other, err := metav1.LabelSelectorAsSelector(ls); err == nil && ls != nil {
		if reqs, ok := other.Requirements(); ok {
			sel = sel.Add(reqs...)
		}
	}
	return sel
}

// volumes answers the VolumeBinding plugin from the listers.
type volumes struct {
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

func (v *volumes) PVC(ns, name string) (*v1.PersistentVolumeClaim, bool) {
	pvc, err := v.pvcs.PersistentVolumeClaims(ns).Get(name)
	return pvc, err == nil
}

func (v *volumes) PV(name string) (*v1.PersistentVolume, bool) {
	pv, err := v.pvs.Get(name)
	return pv, err == nil
}

func (v *volumes) StorageClass(name string) (*storagev1.StorageClass, bool) {
	sc, err := v.classes.Get(name)
	return sc, err == nil
}

func (v *volumes) PVs() []*v1.PersistentVolume {
	pvs, _ := v.pvs.List(labels.Everything())
	return pvs
}
