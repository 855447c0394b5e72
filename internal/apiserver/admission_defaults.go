package apiserver

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/storage/volume"

	"orch/internal/apiserver/registry/storageclasses"
)

// annDefaultIngressClass marks the default IngressClass;
// annIngressClass is the class annotation older Ingresses use instead of
// spec.ingressClassName.
const (
	annDefaultIngressClass = "ingressclass.kubernetes.io/is-default-class"
	annIngressClass        = "kubernetes.io/ingress.class"
)

// defaultStorageClass is upstream's DefaultStorageClass admission: a new
// claim that leaves spec.storageClassName unset (nil, not "") gets the
// default StorageClass, the newest one when several are marked.
func (s *Server) defaultStorageClass(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.StorageClassName != nil {
		return nil
	}
	name, err := s.newestMarked(ctx, storagev1.SchemeGroupVersion.WithResource("storageclasses"),
		func(annotations map[string]string) bool {
			return storageclasses.IsDefault(metav1.ObjectMeta{Annotations: annotations})
		})
	if name != "" {
		pvc.Spec.StorageClassName = &name
	}
	return err
}

// admitClaimResize is upstream's PersistentVolumeClaimResize admission: a
// claim may ask for more storage only once bound, and only when its
// StorageClass allows expansion.
func (s *Server) admitClaimResize(ctx context.Context, pvc, old *corev1.PersistentVolumeClaim) error {
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	forbid := func(msg string) error {
		return apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), pvc.Name, errors.New(msg))
	}
	if old.Status.Phase != corev1.ClaimBound {
		return forbid("Only bound persistent volume claims can be expanded")
	}
	refused := forbid("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	name := volume.GetPersistentVolumeClaimClass(pvc)
	rs := s.resources[storagev1.SchemeGroupVersion.WithResource("storageclasses")]
	if name == "" || rs == nil {
		return refused
	}
	obj, err := rs.get(ctx, "", name)
	if isNotFound(err) {
		return refused
	}
	if err != nil {
		return err
	}
	if sc, ok := obj.(*storagev1.StorageClass); !ok || sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return refused
	}
	return nil
}

// defaultIngressClass is upstream's DefaultIngressClass admission: a new
// Ingress that names no class (neither field nor annotation) gets the
// default IngressClass, the newest one when several are marked.
func (s *Server) defaultIngressClass(ctx context.Context, ing *networkingv1.Ingress) error {
	if ing.Spec.IngressClassName != nil || ing.Annotations[annIngressClass] != "" {
		return nil
	}
	name, err := s.newestMarked(ctx, networkingv1.SchemeGroupVersion.WithResource("ingressclasses"),
		func(annotations map[string]string) bool { return annotations[annDefaultIngressClass] == "true" })
	if name != "" {
		ing.Spec.IngressClassName = &name
	}
	return err
}

// newestMarked is the name of the newest object of gvr (cluster-scoped)
// that marked says is the default, the first by name on a tie, or "" when
// none is.
func (s *Server) newestMarked(ctx context.Context, gvr schema.GroupVersionResource, marked func(annotations map[string]string) bool) (string, error) {
	rs := s.resources[gvr]
	if rs == nil {
		return "", nil
	}
	kvs, _, err := rs.cache.List(ctx, 0, rs.listPrefix(""))
	if err != nil {
		return "", err
	}
	var best metav1.Object
	for _, kv := range kvs {
		m := mustAccessor(kv.Value.(runtime.Object))
		if marked(m.GetAnnotations()) && (best == nil || newer(m, best)) {
			best = m
		}
	}
	if best == nil {
		return "", nil
	}
	return best.GetName(), nil
}

func newer(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	return a.GetName() < b.GetName()
}

// alwaysPullImages is upstream's AlwaysPullImages admission of a new pod:
// every container pulls its image, so a pod can only use an image its
// credentials may pull, not one a previous pod left on the node.
func alwaysPullImages(pod *corev1.Pod) {
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].ImagePullPolicy = corev1.PullAlways
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].ImagePullPolicy = corev1.PullAlways
	}
	for i := range pod.Spec.EphemeralContainers {
		pod.Spec.EphemeralContainers[i].ImagePullPolicy = corev1.PullAlways
	}
}
