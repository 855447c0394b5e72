package pvcprotection_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/pvcprotection"
	"orch/internal/envtest"
	"orch/internal/volumeprotection"
)

// A claim that a scheduled pod uses is kept, Terminating, until the pod is
// gone; one no pod uses goes at once; a claim without the finalizer gets
// it back.
func TestClaimInUseIsKept(t *testing.T) {
	env := controllertest.New(t, "app")
	env.Start(t, pvcprotection.New(env.Context))
	claims := env.Context.Client.CoreV1().PersistentVolumeClaims("app")
	pods := env.Context.Client.CoreV1().Pods("app")
	ctx := t.Context()
	mkClaim := func(name string) *corev1.PersistentVolumeClaim {
		pvc, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pvc
	}
	gone := func(name string) func() bool {
		return func() bool { _, err := claims.Get(ctx, name, metav1.GetOptions{}); return apierrors.IsNotFound(err) }
	}

	used := mkClaim("used")
	if !slices.Contains(used.Finalizers, volumeprotection.ClaimFinalizer) {
		t.Fatalf("StorageObjectInUseProtection admission gave the new claim finalizers %v, want %s", used.Finalizers, volumeprotection.ClaimFinalizer)
	}
	mkClaim("unused")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Image: "i"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "used"}}}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"used", "unused"} {
		if err := claims.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	envtest.EventuallyTrue(t, "the unused claim to go", gone("unused"))
	// The controller has looked at both by now (one queue, in order);
	// the used one stays.
	pvc, err := claims.Get(ctx, "used", metav1.GetOptions{})
	if err != nil || pvc.DeletionTimestamp == nil {
		t.Fatalf("the claim in use: %v, %+v; want it kept, Terminating", err, pvc)
	}
	if err := pods.Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the claim to go once its pod is gone", gone("used"))

	// A claim from before the admission plugin was on gets the finalizer.
	old := mkClaim("old")
	old.Finalizers = nil
	if _, err := claims.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the finalizer back on an unprotected claim", func() bool {
		pvc, err := claims.Get(ctx, "old", metav1.GetOptions{})
		return err == nil && slices.Contains(pvc.Finalizers, volumeprotection.ClaimFinalizer)
	})
}
