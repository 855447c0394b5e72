package pvprotection_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/pvprotection"
	"orch/internal/envtest"
	"orch/internal/volumeprotection"
)

// A bound volume being deleted is kept until it is no longer bound.
func TestBoundVolumeIsKept(t *testing.T) {
	env := controllertest.New(t)
	env.Start(t, pvprotection.New(env.Context))
	volumes := env.Context.Client.CoreV1().PersistentVolumes()
	ctx := t.Context()
	create := func(name string) *corev1.PersistentVolume {
		pv, err := volumes.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pv
	}
	gone := func(name string) func() bool {
		return func() bool { _, err := volumes.Get(ctx, name, metav1.GetOptions{}); return apierrors.IsNotFound(err) }
	}
	pv := create("pv1")
	create("unbound")
	if !slices.Contains(pv.Finalizers, volumeprotection.VolumeFinalizer) {
		t.Fatalf("StorageObjectInUseProtection admission gave the new volume finalizers %v, want %s", pv.Finalizers, volumeprotection.VolumeFinalizer)
	}
	pv.Status.Phase = corev1.VolumeBound
	if _, err := volumes.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pv1", "unbound"} {
		if err := volumes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	envtest.EventuallyTrue(t, "the unbound volume to go", gone("unbound"))
	// The controller has looked at both by now (one queue, in order);
	// the bound one stays.
	pv, err := volumes.Get(ctx, "pv1", metav1.GetOptions{})
	if err != nil || !slices.Contains(pv.Finalizers, volumeprotection.VolumeFinalizer) {
		t.Fatalf("the bound volume: %v, %+v; want it kept with its finalizer", err, pv)
	}
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := volumes.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the released volume to go", gone("pv1"))
}
