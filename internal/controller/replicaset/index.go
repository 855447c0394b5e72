package replicaset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

const (
	// podOwnerIndex indexes pods by their controller (namespace, kind, name,
	// UID); pods without a controller are indexed by namespace alone.
	podOwnerIndex = "orch.replicaset/pod-controller"
	// controllerUIDIndex indexes ReplicaSets (and ReplicationControllers)
	// by the UID of their own controller, e.g. a Deployment.
	controllerUIDIndex = "orch.replicaset/controller-uid"
)

// addIndex adds an index unless the informer already has one by that name
// (another controller built from the same factory may have added it). It
// only fails if the informer has already started, which is a wiring error.
func addIndex(informer cache.SharedIndexInformer, name string, fn cache.IndexFunc) error {
	if _, ok := informer.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("adding index %q: %w (build the controllers before starting the informer factory)", name, err)
	}
	return nil
}

// ownerIndexKey is the podOwnerIndex key of pods controlled by the owner,
// or of orphans in namespace when ref is nil.
func ownerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

func indexPodByOwner(obj interface{}) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return []string{ownerIndexKey(pod.Namespace, metav1.GetControllerOfNoCopy(pod))}, nil
}

func indexByControllerUID(obj interface{}) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}

// podsOwnedOrOrphaned returns the pods rs controls plus the orphans in its
// namespace (candidates for adoption).
func (m *manager) podsOwnedOrOrphaned(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	owner := &metav1.OwnerReference{Kind: m.kind.gvk.Kind, Name: rs.Name, UID: rs.UID}
	var out []*corev1.Pod
	for _, key := range []string{ownerIndexKey(rs.Namespace, owner), ownerIndexKey(rs.Namespace, nil)} {
		objs, err := m.podIndexer.ByIndex(podOwnerIndex, key)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok {
				out = append(out, pod)
			}
		}
	}
	return out, nil
}

// relatedPods returns the pods selected by any object of this kind that has
// the same controller as rs (the ReplicaSets of one Deployment). They tell
// which nodes already run several of the Deployment's pods.
func (m *manager) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil, nil
	}
	objs, err := m.ownerIndex.ByIndex(controllerUIDIndex, string(ref.UID))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*corev1.Pod
	for _, obj := range objs {
		related, ok := m.kind.convert(obj)
		if !ok || related.Namespace != rs.Namespace {
			continue
		}
		pods, err := m.podLister.Pods(related.Namespace).List(selectorOf(related))
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			if seen[string(pod.UID)] {
				continue
			}
			seen[string(pod.UID)] = true
			out = append(out, pod)
		}
	}
	return out, nil
}

// selectorOf returns rs's pod selector; an invalid or empty one selects
// nothing.
func selectorOf(rs *appsv1.ReplicaSet) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || sel.Empty() {
		return labels.Nothing()
	}
	return sel
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }
