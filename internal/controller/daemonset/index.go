package daemonset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// podOwnerIndex indexes pods by the UID of their controller; pods without
// one by their namespace.
const podOwnerIndex = "orch.daemonset/pod-controller"

// addIndex adds an index unless the informer already has one by that
// name; it fails only once the informer has started (a wiring error).
func addIndex(informer cache.SharedIndexInformer, name string, fn cache.IndexFunc) error {
	if _, ok := informer.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("adding index %q: %w (build the controllers before starting the informer factory)", name, err)
	}
	return nil
}

func indexPodByOwner(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return []string{"uid/" + string(ref.UID)}, nil
	}
	return []string{"orphan/" + pod.Namespace}, nil
}

// ownedOrOrphaned returns the pods ds controls and the orphans of its
// namespace, from the informer cache.
func (c *Controller) ownedOrOrphaned(ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, key := range []string{"uid/" + string(ds.UID), "orphan/" + ds.Namespace} {
		objs, err := c.podIndexer.ByIndex(podOwnerIndex, key)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok && pod.Namespace == ds.Namespace {
				out = append(out, pod)
			}
		}
	}
	return out, nil
}

// byNode groups pods by the node they are for; pods that name no node are
// left out. Finished pods already being deleted are left out too unless
// withDeletedTerminal: nothing is left to do with them.
func byNode(pods []*corev1.Pod, withDeletedTerminal bool) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if !withDeletedTerminal && isTerminal(pod) && pod.DeletionTimestamp != nil {
			continue
		}
		node, err := targetNode(pod)
		if err != nil {
			continue
		}
		out[node] = append(out[node], pod)
	}
	return out
}
