package replicaset

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kind is what differs between ReplicaSets and ReplicationControllers. The
// loop itself only sees apps/v1 ReplicaSets: a ReplicationController is
// converted on the way in (from the informer, from a GET) and back on the
// way out (status updates, events).
type kind struct {
	gvk schema.GroupVersionKind
	// name is the lower-case kind, used for the queue and in logs.
	name string
	// component is the source of the events.
	component string
	informer  cache.SharedIndexInformer
	// convert turns an informer object into a ReplicaSet; false if it is
	// of the wrong type.
	convert func(obj interface{}) (*appsv1.ReplicaSet, bool)
	// fresh reads the object from the apiserver, not the cache.
	fresh func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// updateStatus writes rs.Status through the status subresource.
	updateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// original turns a ReplicaSet back into the object events are about.
	original func(rs *appsv1.ReplicaSet) runtime.Object
	// terminatingReplicas is whether status.terminatingReplicas exists.
	terminatingReplicas bool
}

func replicaSetKind(client kubernetes.Interface, informer cache.SharedIndexInformer) *kind {
	return &kind{
		gvk:       appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		name:      "replicaset",
		component: "replicaset-controller",
		informer:  informer,
		convert: func(obj interface{}) (*appsv1.ReplicaSet, bool) {
			rs, ok := obj.(*appsv1.ReplicaSet)
			if ok && rs.Spec.Replicas == nil {
				// The apiserver defaults it to 1; a fake client may not.
				rs = rs.DeepCopy()
				rs.Spec.Replicas = new(int32)
				*rs.Spec.Replicas = 1
			}
			return rs, ok
		},
		fresh: func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		},
		original:            func(rs *appsv1.ReplicaSet) runtime.Object { return rs },
		terminatingReplicas: true,
	}
}

func replicationControllerKind(client kubernetes.Interface, informer cache.SharedIndexInformer) *kind {
	return &kind{
		gvk:       corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		name:      "replicationcontroller",
		component: "replication-controller",
		informer:  informer,
		convert: func(obj interface{}) (*appsv1.ReplicaSet, bool) {
			rc, ok := obj.(*corev1.ReplicationController)
			if !ok {
				return nil, false
			}
			return rcToRS(rc), true
		},
		fresh: func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
			rc, err := client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return rcToRS(rc), nil
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			rc, err := client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, rsToRC(rs), metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			return rcToRS(rc), nil
		},
		original: func(rs *appsv1.ReplicaSet) runtime.Object { return rsToRC(rs) },
		// The ReplicationController API has no status.terminatingReplicas.
		terminatingReplicas: false,
	}
}

// rcToRS reads a ReplicationController as a ReplicaSet: the selector map
// becomes matchLabels, the template pointer a value.
func rcToRS(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: maps.Clone(rc.Spec.Selector)},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	replicas := int32(1)
	if rc.Spec.Replicas != nil {
		replicas = *rc.Spec.Replicas
	}
	rs.Spec.Replicas = &replicas
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// rsToRC is the way back from rcToRS.
func rsToRC(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas != nil {
		n := *rs.Spec.Replicas
		rc.Spec.Replicas = &n
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = maps.Clone(rs.Spec.Selector.MatchLabels)
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
